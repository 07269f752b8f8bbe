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

/// Whether `model` (`provider/model`) takes images: `[models."<p>/<m>"] vision`, default true.
pub fn sees_images(config: &lurkbot_core::Config, model: &str) -> bool {
    config
        .models
        .get(model)
        .and_then(|m| m.vision)
        .unwrap_or(true)
}

/// The images `model` is shown, and a note for the message when it is set without vision (the
/// pictures stay saved; only the model does not get them).
pub(crate) fn for_model(
    config: &lurkbot_core::Config,
    model: &str,
    images: Vec<ImagePart>,
) -> (Vec<ImagePart>, Option<String>) {
    if images.is_empty() || sees_images(config, model) {
        return (images, None);
    }
    let paths: Vec<&str> = images.iter().map(|i| i.path.as_str()).collect();
    let note = format!(
        "\n[{} image(s) not shown ({}): {model} is set without vision ([models.\"{model}\"] vision = false)]",
        images.len(),
        paths.join(", ")
    );
    (Vec::new(), Some(note))
}

/// The file of a kept picture: `relative` resolved inside the home as every reader resolves it
/// (links followed, confined), and only when what it resolves to lies under [`IMAGES_DIR`] — a
/// link planted there that points at `config.toml` is not a picture.
pub fn kept_file(home: &Home, relative: &str) -> Option<std::path::PathBuf> {
    home.resolve_under(IMAGES_DIR, relative)
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
            match kept_file(home, &image.path).map(std::fs::read) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_that_resolve_under_the_images_folder_are_kept_pictures() {
        let dir = tempfile::tempdir().unwrap_or_else(|_| unreachable!());
        let home = Home::open(&dir.path().join("home")).unwrap_or_else(|_| unreachable!());
        let images = home.join(IMAGES_DIR);
        std::fs::create_dir_all(&images).unwrap_or_default();
        std::fs::write(images.join("a.jpg"), b"x").unwrap_or_default();
        std::fs::write(home.join("config.toml"), b"token").unwrap_or_default();
        #[cfg(unix)]
        std::os::unix::fs::symlink(home.join("config.toml"), images.join("b.jpg"))
            .unwrap_or_default();
        assert!(kept_file(&home, &format!("{IMAGES_DIR}/a.jpg")).is_some());
        assert_eq!(kept_file(&home, &format!("{IMAGES_DIR}/b.jpg")), None);
        assert_eq!(
            kept_file(&home, &format!("{IMAGES_DIR}/../../config.toml")),
            None
        );
        assert_eq!(kept_file(&home, "config.toml"), None);
    }
}
