//! What an image is, by its first bytes (never by its name or a `Content-Type`).

/// The formats a model is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (its first frame).
    Gif,
    /// WebP.
    Webp,
}

impl ImageFormat {
    /// The name people use (`PNG`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Gif => "GIF",
            Self::Webp => "WebP",
        }
    }

    pub(crate) fn codec(self) -> image::ImageFormat {
        match self {
            Self::Png => image::ImageFormat::Png,
            Self::Jpeg => image::ImageFormat::Jpeg,
            Self::Gif => image::ImageFormat::Gif,
            Self::Webp => image::ImageFormat::WebP,
        }
    }
}

/// The format `bytes` begin with, if it is one of [`ImageFormat`]'s.
pub fn recognise(bytes: &[u8]) -> Option<ImageFormat> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageFormat::Jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(ImageFormat::Gif)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(ImageFormat::Webp)
    } else {
        None
    }
}

/// What `bytes` look like when they are not an image, for the refusal.
pub(crate) fn describe(bytes: &[u8]) -> &'static str {
    let head: Vec<u8> = bytes.iter().take(512).map(u8::to_ascii_lowercase).collect();
    let text = String::from_utf8_lossy(&head);
    let trimmed = text.trim_start();
    if bytes.is_empty() {
        "an empty file"
    } else if trimmed.starts_with("<!doctype html")
        || trimmed.starts_with("<html")
        || text.contains("<body")
    {
        "an HTML page"
    } else if trimmed.starts_with("<svg") || (trimmed.starts_with("<?xml") && text.contains("<svg"))
    {
        "an SVG drawing (text, not pixels)"
    } else if bytes.starts_with(b"%PDF") {
        "a PDF document"
    } else if std::str::from_utf8(&head).is_ok() {
        "text"
    } else {
        "not PNG, JPEG, GIF or WebP"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_known_by_their_first_bytes() {
        assert_eq!(recognise(b"\x89PNG\r\n\x1a\n...."), Some(ImageFormat::Png));
        assert_eq!(
            recognise(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(recognise(b"GIF89a.."), Some(ImageFormat::Gif));
        assert_eq!(recognise(b"RIFF\0\0\0\0WEBPVP8 "), Some(ImageFormat::Webp));
        assert_eq!(recognise(b"<!DOCTYPE html><html>"), None);
        assert_eq!(describe(b"  <!DOCTYPE html><html>"), "an HTML page");
        assert_eq!(describe(b""), "an empty file");
        assert_eq!(describe(b"%PDF-1.7"), "a PDF document");
    }
}
