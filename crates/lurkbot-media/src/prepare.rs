//! One image made ready for a model: bounded, decoded, downscaled, re-encoded.

use std::io::Cursor;

use image::{DynamicImage, GenericImageView, ImageReader, Limits};

use crate::format::{ImageFormat, describe, recognise};

/// Largest file accepted (20 MiB).
pub const MAX_BYTES: u64 = 20 * 1024 * 1024;
/// Most pixels accepted (50 megapixels), judged from the header before decoding.
pub const MAX_PIXELS: u64 = 50_000_000;
/// Longest edge given to a model, in pixels.
pub const MAX_EDGE: u32 = 2048;
/// JPEG quality of re-encoded photos.
const JPEG_QUALITY: u8 = 85;

/// Why an image cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    /// Over [`MAX_BYTES`].
    #[error("the image is {bytes} bytes; images over {} MiB are refused", MAX_BYTES / 1024 / 1024)]
    TooLarge {
        /// Its size.
        bytes: u64,
    },
    /// Over [`MAX_PIXELS`] (a decompression bomb is one).
    #[error(
        "the image is {width}×{height} pixels; images over {} megapixels are refused before decoding",
        MAX_PIXELS / 1_000_000
    )]
    TooManyPixels {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
    },
    /// Not PNG, JPEG, GIF or WebP.
    #[error("this is {0}, not an image (PNG, JPEG, GIF or WebP)")]
    NotAnImage(&'static str),
    /// Its data is damaged or cut short.
    #[error("the {format} image is damaged or cut short: {reason}")]
    Damaged {
        /// The format its first bytes claim.
        format: &'static str,
        /// What the decoder said.
        reason: String,
    },
}

impl MediaError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TooLarge { .. } | Self::TooManyPixels { .. } => "ImageTooLarge",
            Self::NotAnImage(_) => "NotAnImage",
            Self::Damaged { .. } => "ImageDamaged",
        }
    }
}

/// An image ready for a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// The encoded image (JPEG, or PNG when a pixel is transparent).
    pub bytes: Vec<u8>,
    /// `image/jpeg` or `image/png`.
    pub media_type: &'static str,
    /// What it was.
    pub source_format: ImageFormat,
    /// Its size as given.
    pub original: (u32, u32),
    /// Its size now.
    pub size: (u32, u32),
}

/// Checks, decodes, downscales and re-encodes `bytes`.
///
/// # Errors
/// A [`MediaError`] saying what is wrong; nothing is decoded past a size or pixel limit.
pub fn prepare(bytes: &[u8]) -> Result<Prepared, MediaError> {
    let len = bytes.len() as u64;
    if len > MAX_BYTES {
        return Err(MediaError::TooLarge { bytes: len });
    }
    let format = recognise(bytes).ok_or_else(|| MediaError::NotAnImage(describe(bytes)))?;
    let damaged = |e: image::ImageError| MediaError::Damaged {
        format: format.name(),
        reason: e.to_string(),
    };
    let header = ImageReader::with_format(Cursor::new(bytes), format.codec());
    let (width, height) = header.into_dimensions().map_err(damaged)?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(MediaError::TooManyPixels { width, height });
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.codec());
    let mut limits = Limits::default();
    limits.max_image_width = Some(width);
    limits.max_image_height = Some(height);
    // RGBA at 16 bits per channel for the declared size, and no more.
    limits.max_alloc = Some(u64::from(width) * u64::from(height) * 8 + (1 << 20));
    reader.limits(limits);
    let decoded = reader.decode().map_err(damaged)?;
    let scaled = downscale(decoded);
    let size = scaled.dimensions();
    let (encoded, media_type) = encode(&scaled).map_err(damaged)?;
    Ok(Prepared {
        bytes: encoded,
        media_type,
        source_format: format,
        original: (width, height),
        size,
    })
}

fn downscale(image: DynamicImage) -> DynamicImage {
    let (w, h) = image.dimensions();
    if w.max(h) <= MAX_EDGE {
        return image;
    }
    // Keeps the aspect ratio inside MAX_EDGE × MAX_EDGE. `thumbnail` averages the source pixels
    // under each target pixel in one pass over 8-bit data: for the large factors of a photo it
    // is as good as a filtered resize, several times faster, and needs no float copy of the
    // whole image (a 24-megapixel resize through `resize` held ~290 MiB of f32).
    image.thumbnail(MAX_EDGE, MAX_EDGE)
}

fn encode(image: &DynamicImage) -> Result<(Vec<u8>, &'static str), image::ImageError> {
    let mut out = Cursor::new(Vec::new());
    let transparent = image.color().has_alpha() && image.to_rgba8().pixels().any(|p| p.0[3] < 255);
    if transparent {
        image.write_to(&mut out, image::ImageFormat::Png)?;
        return Ok((out.into_inner(), "image/png"));
    }
    let rgb = image.to_rgb8();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
    rgb.write_with_encoder(encoder)?;
    Ok((out.into_inner(), "image/jpeg"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32, alpha: bool) -> Vec<u8> {
        let image = if alpha {
            DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
                width,
                height,
                image::Rgba([1, 2, 3, 128]),
            ))
        } else {
            DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
                width,
                height,
                image::Rgb([200, 10, 10]),
            ))
        };
        let mut out = Cursor::new(Vec::new());
        image
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap_or_default();
        out.into_inner()
    }

    #[test]
    fn large_images_are_downscaled_and_transparency_is_kept() {
        let p = prepare(&png(3000, 1000, false));
        assert!(
            matches!(&p, Ok(p) if p.size == (2048, 683) && p.media_type == "image/jpeg" && p.original == (3000, 1000)),
            "{p:?}"
        );
        let small = prepare(&png(40, 30, true));
        assert!(
            matches!(&small, Ok(p) if p.size == (40, 30) && p.media_type == "image/png"),
            "{small:?}"
        );
    }

    #[test]
    fn a_header_claiming_too_many_pixels_is_refused_before_decoding() {
        // A valid PNG header (IHDR) declaring 10,000 × 10,000 pixels, with no pixel data at all.
        let mut bomb = png(1, 1, false);
        bomb[16..20].copy_from_slice(&10_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&10_000u32.to_be_bytes());
        let crc = crc(&bomb[12..29]);
        bomb[29..33].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            prepare(&bomb),
            Err(MediaError::TooManyPixels {
                width: 10_000,
                height: 10_000
            })
        );
        assert!(matches!(
            prepare(b"<html><body>hi</body></html>"),
            Err(MediaError::NotAnImage("an HTML page"))
        ));
        let cut = png(64, 64, false);
        assert!(matches!(
            prepare(&cut[..cut.len() / 2]),
            Err(MediaError::Damaged { .. })
        ));
    }

    /// PNG's chunk CRC (CRC-32/ISO-HDLC) over the chunk type and data.
    fn crc(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for b in bytes {
            crc ^= u32::from(*b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
}
