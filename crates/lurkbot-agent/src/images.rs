//! Images shown to the model (ARCHITECTURE.md §5.2): made ready by `lurkbot-media` (bounded,
//! downscaled, metadata dropped), saved once under `artifacts/images/<sha256>.<ext>` (state: no
//! tool writes there), and referenced from the transcript by that path. Before each request the
//! referenced files are loaded as base64; a file gone since is replaced by a note.

use base64::Engine as _;
use lurkbot_core::Home;
use lurkbot_llm::{ImagePart, Message};
use lurkbot_media::Prepared;
use sha2::{Digest, Sha256};

/// Where prepared images are kept, relative to the home.
pub const IMAGES_DIR: &str = "artifacts/images";

/// About what one image costs in a request (a 2,048-pixel image: OpenAI ≈ 1,100 tokens,
/// Anthropic ≤ 1,600).
pub(crate) const IMAGE_TOKENS: u64 = 1_600;

/// Saves `prepared` (named by its hash, so the same picture is kept once) and returns the part
/// that shows it.
///
/// # Errors
/// The file cannot be written.
pub fn keep(home: &Home, prepared: &Prepared) -> std::io::Result<ImagePart> {
    let digest = Sha256::digest(&prepared.bytes);
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    let ext = if prepared.media_type == "image/png" {
        "png"
    } else {
        "jpg"
    };
    let relative = format!("{IMAGES_DIR}/{hex}.{ext}");
    let path = home.join(&relative);
    if !path.exists() {
        if let Some(dir) = path.parent() {
            lurkbot_core::create_private_dir(dir).map_err(std::io::Error::other)?;
        }
        lurkbot_core::write_atomic(&path, &prepared.bytes).map_err(std::io::Error::other)?;
    }
    Ok(ImagePart {
        media_type: prepared.media_type.to_string(),
        path: relative,
        data: Some(
            base64::engine::general_purpose::STANDARD
                .encode(&prepared.bytes)
                .into(),
        ),
    })
}

/// Loads every referenced image that is not loaded yet (messages read back from a transcript).
/// An image whose file is gone, or is no longer under [`IMAGES_DIR`], is dropped and named in
/// the message's text instead.
pub(crate) fn load(home: &Home, messages: &mut [Message]) {
    for message in messages {
        let mut gone = Vec::new();
        message.images.retain_mut(|image| {
            if image.data.is_some() {
                return true;
            }
            let inside =
                image.path.starts_with(&format!("{IMAGES_DIR}/")) && !image.path.contains("..");
            match inside.then(|| std::fs::read(home.join(&image.path))) {
                Some(Ok(bytes)) => {
                    image.data = Some(
                        base64::engine::general_purpose::STANDARD
                            .encode(bytes)
                            .into(),
                    );
                    true
                }
                _ => {
                    gone.push(image.path.clone());
                    false
                }
            }
        });
        for path in gone {
            message
                .content
                .push_str(&format!("\n[image {path} is no longer available]"));
        }
    }
}
