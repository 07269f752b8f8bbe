//! `image {path | url, prompt?}` (OpenClaw's `view_image`): shows the model one picture — a home
//! file read through the protection model (the resolved path), or a URL fetched under the
//! network rules the gate gives a URL from outside the settings — after `lurkbot-media` has
//! recognised it by content, refused it past 20 MiB or 50 megapixels before decoding, scaled it
//! to at most 2,048 pixels and dropped its metadata. The picture travels as an image part of the
//! tool result (each provider's own format) and stays in the transcript as a file reference.

use std::time::Duration;

use lurkbot_llm::ToolSpec;
use lurkbot_media::{MAX_BYTES, MediaError, Prepared};
use serde_json::Value;

use super::fs::{readable, resolve_path};
use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema};
use crate::web::download::DownloadError;

/// The `image` tool.
pub(crate) struct ImageTool;

impl Tool for ImageTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "image".into(),
            description: "Look at an image: a home file (path) or a URL.".into(),
            parameters: schema(
                r#"{
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "url": {"type": "string"},
                    "prompt": {"type": "string"}
                }
            }"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            match look(ctx, args).await {
                Ok(output) => output,
                Err(e) => e,
            }
        })
    }
}

async fn look(ctx: &ToolCtx<'_>, args: &Value) -> Result<ToolOutput, ToolOutput> {
    let text = |name: &str| {
        args.get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    let (bytes, source) = match (text("path"), text("url")) {
        (Some(path), None) => (read_home_file(ctx, path)?, path.to_string()),
        (None, Some(url)) => (download(ctx, url).await?, url.to_string()),
        _ => {
            return Err(ToolOutput::error(
                "InvalidArgs: give exactly one of path (a file in the home) or url",
            ));
        }
    };
    let prepared = tokio::task::spawn_blocking(move || lurkbot_media::prepare(&bytes))
        .await
        .map_err(|e| ToolOutput::error(format!("ImageDamaged: {e}")))?
        .map_err(|e: MediaError| ToolOutput::error(format!("{}: {source}: {e}", e.code())))?;
    let part = crate::images::keep(ctx.home, &prepared)
        .map_err(|e| ToolOutput::error(format!("cannot keep the image: {e}")))?;
    let mut note = describe(&source, &prepared, &part.path);
    if crate::images::sees_images(ctx.config, ctx.model) {
        if let Some(prompt) = text("prompt") {
            note.push_str(&format!("\nLook for: {prompt}"));
        }
        return Ok(ToolOutput::ok(note).with_images(vec![part]));
    }
    // A model without vision gets the picture in words, when a model that sees is named.
    if ctx.config.tools.media.image_model.is_none() {
        return Err(ToolOutput::error(format!(
            "ModelCannotSeeImages: {} is set as a model without vision ([models.\"{}\"] vision = false in config.toml); set [tools.media] image_model to a model that sees images to get descriptions, or switch models",
            ctx.model, ctx.model
        )));
    }
    match super::describe::describe(ctx, &part, text("prompt")).await {
        Ok((model, words)) => Ok(ToolOutput::ok(format!(
            "{note}\nYour model cannot see images; {model} described it:\n{words}"
        ))),
        Err(why) => Err(ToolOutput::error(format!("ModelCannotSeeImages: {why}"))),
    }
}

fn describe(source: &str, prepared: &Prepared, kept: &str) -> String {
    let (w, h) = prepared.original;
    let (sw, sh) = prepared.size;
    let scaled = if (w, h) == (sw, sh) {
        String::new()
    } else {
        format!(", shown at {sw}×{sh}")
    };
    format!(
        "Image {source} ({} {w}×{h}{scaled}; metadata removed; kept as {kept}) is attached.",
        prepared.source_format.name()
    )
}

fn read_home_file(ctx: &ToolCtx<'_>, raw: &str) -> Result<Vec<u8>, ToolOutput> {
    let path = resolve_path(ctx, raw)?;
    readable(ctx, &path)?;
    let size = std::fs::metadata(path.absolute())
        .map_err(|e| ToolOutput::error(format!("{raw}: {e}")))?
        .len();
    if size > MAX_BYTES {
        let e = MediaError::TooLarge { bytes: size };
        return Err(ToolOutput::error(format!("{}: {raw}: {e}", e.code())));
    }
    std::fs::read(path.absolute()).map_err(|e| ToolOutput::error(format!("{raw}: {e}")))
}

async fn download(ctx: &ToolCtx<'_>, url: &str) -> Result<Vec<u8>, ToolOutput> {
    let timeout = Duration::from_secs(ctx.config.tools.web_fetch.timeout_seconds.max(1));
    let fetched = crate::web::download::download(
        ctx.config,
        url,
        reqwest::header::HeaderMap::new(),
        timeout,
        MAX_BYTES,
    )
    .await;
    fetched.map_err(|e| match e {
        DownloadError::Refused(why) => ToolOutput::error(why),
        DownloadError::TooLarge(_) => ToolOutput::error(format!(
            "ImageTooLarge: {url}: over {} MiB; refused",
            MAX_BYTES / 1024 / 1024
        )),
        other => ToolOutput::error(format!("cannot fetch {url}: {other}")),
    })
}
