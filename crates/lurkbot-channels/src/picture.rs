//! Pictures out: a reply names a picture on a line of its own as OpenClaw's agents do
//! (`MEDIA: ./workspace/chart.png`); the line leaves the text and the picture goes after it
//! as its own outbox entry, read and checked when it is sent.

/// The largest picture sent (WhatsApp's linked devices take 16 MiB; platforms with a lower
/// limit refuse more themselves).
pub const MAX_PICTURE_BYTES: u64 = 16 << 20;

/// A picture to send: its bytes and what they are.
#[derive(Debug, Clone, Copy)]
pub struct Picture<'a> {
    /// The file's bytes.
    pub bytes: &'a [u8],
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, from the bytes themselves.
    pub mime: &'static str,
    /// The file's name (platforms that show one).
    pub name: &'a str,
}

/// What `bytes` are, from their first bytes: the picture formats every platform shows.
pub fn picture_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The reply without its `MEDIA:` lines, and the home-relative paths they name, in order.
///
/// A line is a picture when, once trimmed, it is `MEDIA:` followed by one path (backticks or
/// quotes around it allowed) starting with `./` or `/` (or `file://`), as OpenClaw reads them;
/// `./` is the LurkBot home, which every tool's path is relative to, and an absolute path
/// counts only inside `home_root`. Anything else (a URL, two words, a path outside the home)
/// stays in the text as written.
pub fn split_media_lines(reply: &str, home_root: &std::path::Path) -> (String, Vec<String>) {
    let mut kept = Vec::new();
    let mut pictures = Vec::new();
    for line in reply.lines() {
        match media_path(line, home_root) {
            Some(path) => pictures.push(path),
            None => kept.push(line),
        }
    }
    if pictures.is_empty() {
        return (reply.to_string(), pictures);
    }
    (kept.join("\n").trim().to_string(), pictures)
}

fn media_path(line: &str, home_root: &std::path::Path) -> Option<String> {
    let rest = line.trim();
    let rest = rest
        .get(..6)
        .filter(|head| head.eq_ignore_ascii_case("MEDIA:"))
        .map(|_| rest[6..].trim())?;
    let token = rest.trim_matches(|c| matches!(c, '`' | '"' | '\''));
    if token.is_empty() || token.len() > 1024 || token.contains(char::is_whitespace) {
        return None;
    }
    let token = token.strip_prefix("file://").unwrap_or(token);
    if let Some(relative) = token.strip_prefix("./") {
        return (!relative.is_empty()).then(|| relative.to_string());
    }
    if token.starts_with('/') {
        let inside = std::path::Path::new(token).strip_prefix(home_root).ok()?;
        let relative = inside.to_str()?;
        return (!relative.is_empty()).then(|| relative.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_lines_leave_the_text_and_name_home_relative_paths() {
        let home = std::path::Path::new("/srv/lurkbot");
        let reply = "Here is the chart.\nMEDIA: ./workspace/chart.png\n\
                     media:`/srv/lurkbot/workspace/b.jpg`\nMEDIA: https://example.com/x.png\n\
                     MEDIA: /etc/passwd\nDone.";
        let (text, pictures) = split_media_lines(reply, home);
        assert_eq!(pictures, ["workspace/chart.png", "workspace/b.jpg"]);
        assert_eq!(
            text,
            "Here is the chart.\nMEDIA: https://example.com/x.png\nMEDIA: /etc/passwd\nDone."
        );
        let plain = "No pictures: MEDIA: ./x.png is mid-sentence.";
        assert_eq!(split_media_lines(plain, home), (plain.to_string(), vec![]));
        assert_eq!(
            split_media_lines("MEDIA: ./a.png two", home).1,
            Vec::<String>::new()
        );
    }

    #[test]
    fn pictures_are_known_by_their_bytes() {
        assert_eq!(picture_mime(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(picture_mime(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(picture_mime(b"GIF89a.."), Some("image/gif"));
        assert_eq!(picture_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(picture_mime(b"%PDF-1.7"), None);
        assert_eq!(picture_mime(b"png"), None);
    }
}
