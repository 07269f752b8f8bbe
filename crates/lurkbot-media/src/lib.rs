//! LurkBot's media (ARCHITECTURE.md §5.2): images a model is shown — recognised by their
//! content, refused past [`MAX_BYTES`] or [`MAX_PIXELS`] before a pixel is decoded, downscaled
//! to at most [`MAX_EDGE`] pixels on the long edge and re-encoded, which drops every piece of
//! metadata (EXIF, GPS, comments).

mod format;
mod prepare;

pub use format::{ImageFormat, recognise};
pub use prepare::{MAX_BYTES, MAX_EDGE, MAX_PIXELS, MediaError, Prepared, prepare};

pub mod speech;
