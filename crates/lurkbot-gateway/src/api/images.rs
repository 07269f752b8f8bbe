//! Pictures sent to the gateway by its clients (ARCHITECTURE.md §5.2): `image_url` parts of the
//! OpenAI-compatible API's last user message and the `images` of `chat.send` (the web UI's
//! attach button), both as `data:<type>;base64,<data>` URLs — what OpenAI's SDKs send for a
//! local file. Each is made ready by `lurkbot-media` like every picture the model sees and
//! shown with the turn's message. An `http(s)` URL is refused with a message saying to send the
//! bytes: the gateway does not fetch for its caller. `GET /v1/images/<name>` serves a kept
//! picture back (with the token), so the web UI can show a session's pictures.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use lurkbot_llm::ImagePart;
use serde_json::Value;

use crate::access::http::{GatewayAuth, HttpError};

/// Most images in one message.
pub(crate) const MAX_IMAGES: usize = 8;

/// The bytes of a `data:<type>;base64,<data>` URL.
pub(crate) fn decode_data_url(url: &str) -> Result<Vec<u8>, String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Err("an image must be a data: URL (data:image/png;base64,...): the gateway does not fetch image URLs for its caller; read the file and send its bytes".into());
    };
    let data = rest
        .split_once(";base64,")
        .map(|(_, d)| d)
        .ok_or("the image data: URL must be base64 (data:<type>;base64,<data>)")?;
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the image's base64 is invalid: {e}"))
}

/// The decoded bytes of the `image_url` parts of an API message.
pub(crate) fn data_urls(message: &Value) -> Result<Vec<Vec<u8>>, HttpError> {
    let Some(parts) = message.get("content").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let urls: Vec<&str> = parts
        .iter()
        .filter(|p| p["type"] == "image_url")
        .map(|part| {
            part.pointer("/image_url/url")
                .or_else(|| part.get("image_url"))
                .and_then(Value::as_str)
                .ok_or_else(|| HttpError::bad_request("an image_url part needs image_url.url"))
        })
        .collect::<Result<_, _>>()?;
    decode_all(&urls).map_err(HttpError::bad_request)
}

/// Every URL decoded, at most [`MAX_IMAGES`].
pub(crate) fn decode_all(urls: &[&str]) -> Result<Vec<Vec<u8>>, String> {
    if urls.len() > MAX_IMAGES {
        return Err(format!("at most {MAX_IMAGES} images per message"));
    }
    urls.iter().map(|u| decode_data_url(u)).collect()
}

/// Each image checked, scaled and kept; the first one that is not a usable picture fails with
/// its code (`NotAnImage`, `ImageTooLarge`, `ImageDamaged`).
pub(crate) async fn ready(
    home: &lurkbot_core::Home,
    raw: Vec<Vec<u8>>,
) -> Result<Vec<ImagePart>, String> {
    let mut parts = Vec::with_capacity(raw.len());
    for bytes in raw {
        let prepared = tokio::task::spawn_blocking(move || lurkbot_media::prepare(&bytes))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("{}: {e}", e.code()))?;
        parts.push(
            lurkbot_agent::images::keep(home, &prepared)
                .map_err(|e| format!("cannot keep the image: {e}"))?,
        );
    }
    Ok(parts)
}

/// `GET /v1/images/<name>`: a picture kept under `artifacts/images/` (its name is the hash
/// [`lurkbot_agent::images::keep`] gave it; nothing else there or elsewhere is served).
pub(crate) async fn serve(GatewayAuth(state): GatewayAuth, Path(name): Path<String>) -> Response {
    let (stem, ext) = name.split_once('.').unwrap_or((&name, ""));
    let media_type = match ext {
        "jpg" => "image/jpeg",
        "png" => "image/png",
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    if stem.len() != 32
        || !stem
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    let relative = format!("{}/{name}", lurkbot_agent::images::IMAGES_DIR);
    match lurkbot_agent::images::kept_file(&state.home, &relative) {
        Some(path) => kept_file(path, media_type).await,
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /v1/audio/<name>`: a voice note `tts` made under `workspace/audio/` (resolved and
/// confined as every reader does; nothing else is served), for the web UI's player.
pub(crate) async fn serve_audio(
    GatewayAuth(state): GatewayAuth,
    Path(name): Path<String>,
) -> Response {
    match lurkbot_agent::speech::voice_note_file(&state.home, &name) {
        Some(path) => kept_file(path, "audio/ogg").await,
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A kept file's bytes as `media_type`, private to the token holder.
async fn kept_file(path: std::path::PathBuf, media_type: &'static str) -> Response {
    match tokio::task::spawn_blocking(move || std::fs::read(path)).await {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, media_type),
                (header::CACHE_CONTROL, "private, max-age=86400"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            bytes,
        )
            .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
