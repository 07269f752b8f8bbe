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

/// A description of `image` in words by `[tools.media] image_model`, for a turn whose model
/// cannot see: one call under the same budgets as every model call (reserved, then recorded).
///
/// # Errors
/// Why no description came: the setting is missing or wrong, a cap, the provider's failure.
pub(crate) async fn describe(
    ctx: &crate::tools::ToolCtx<'_>,
    image: &ImagePart,
    prompt: Option<&str>,
) -> Result<(String, String), String> {
    let model = ctx
        .config
        .tools
        .media
        .image_model
        .as_deref()
        .ok_or("no [tools.media] image_model is set")?;
    let parsed = model
        .parse::<lurkbot_llm::ModelRef>()
        .map_err(|e| format!("[tools.media] image_model '{model}': {e}"))?;
    let mut failover = lurkbot_llm::Failover::new(
        vec![parsed],
        &crate::setup::variables(ctx.home),
        Some(
            ctx.home
                .join(lurkbot_core::layout::AUTH)
                .join("profiles.json"),
        ),
    )
    .map_err(|e| format!("[tools.media] image_model '{model}': {e}"))?;
    let zone = crate::usage::zone(ctx.config);
    let meter = crate::usage::Meter {
        config: ctx.config,
        zone: &zone,
        home: ctx.home,
        agent: ctx.session.agent_id(),
        session: ctx.session.as_str(),
        run_budget: None,
    };
    let ask = prompt
        .unwrap_or("Describe this image: what it shows, every text in it, and anything notable.");
    let estimate = IMAGE_TOKENS + 100;
    let _held = meter
        .reserve(model, estimate, 0)
        .map_err(|e| e.to_string())?;
    let request = lurkbot_llm::ChatRequest {
        model: String::new(),
        system: "You describe images for an assistant that cannot see them. Be factual and complete; transcribe any text exactly.".into(),
        messages: vec![Message::user(ask).with_images(vec![image.clone()])],
        tools: Vec::new(),
        max_tokens: 1024,
        reasoning: None,
    };
    let answered = failover
        .chat(&request, &mut |_| {})
        .await
        .map_err(|e| format!("{model} could not describe it: {e}"))?;
    let text = answered.response.text.clone();
    meter.record(&answered.model.to_string(), answered.response.usage, || {
        (estimate, crate::compaction::estimate_tokens(&text))
    });
    Ok((answered.model.to_string(), text))
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
