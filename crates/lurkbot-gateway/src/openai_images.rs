//! Images in the OpenAI-compatible API (ARCHITECTURE.md §5.2): `image_url` parts of the last
//! user message, as `data:<type>;base64,<data>` URLs (what OpenAI's SDKs send for a local
//! file), made ready by `lurkbot-media` like every picture the model sees and shown with the
//! turn's message. An `http(s)` image URL is refused with a message saying to send the bytes:
//! the API does not fetch for its caller.

use axum::http::StatusCode;
use base64::Engine as _;
use lurkbot_llm::ImagePart;
use serde_json::Value;

use crate::http::HttpError;
use crate::state::AppState;

/// Most images in one request.
const MAX_IMAGES: usize = 8;

/// The decoded bytes of the `image_url` parts of `message`.
pub(crate) fn data_urls(message: &Value) -> Result<Vec<Vec<u8>>, HttpError> {
    let Some(parts) = message.get("content").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut images = Vec::new();
    for part in parts.iter().filter(|p| p["type"] == "image_url") {
        let url = part
            .pointer("/image_url/url")
            .or_else(|| part.get("image_url"))
            .and_then(Value::as_str)
            .ok_or_else(|| HttpError::bad_request("an image_url part needs image_url.url"))?;
        let Some(rest) = url.strip_prefix("data:") else {
            return Err(HttpError::bad_request(
                "image_url must be a data: URL (data:image/png;base64,...): the gateway does not fetch image URLs for its caller; read the file and send its bytes",
            ));
        };
        let data = rest.split_once(";base64,").map(|(_, d)| d).ok_or_else(|| {
            HttpError::bad_request("the image data: URL must be base64 (data:<type>;base64,<data>)")
        })?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| HttpError::bad_request(format!("the image's base64 is invalid: {e}")))?;
        images.push(bytes);
        if images.len() > MAX_IMAGES {
            return Err(HttpError::bad_request(format!(
                "at most {MAX_IMAGES} images per message"
            )));
        }
    }
    Ok(images)
}

/// Each image checked, scaled and kept; the first one that is not a usable picture fails the
/// request with its code (`NotAnImage`, `ImageTooLarge`, `ImageDamaged`).
pub(crate) async fn ready(
    state: &AppState,
    raw: Vec<Vec<u8>>,
) -> Result<Vec<ImagePart>, HttpError> {
    let mut parts = Vec::with_capacity(raw.len());
    for bytes in raw {
        let prepared = tokio::task::spawn_blocking(move || lurkbot_media::prepare(&bytes))
            .await
            .map_err(|e| {
                HttpError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    e.to_string(),
                )
            })?
            .map_err(|e| {
                HttpError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    format!("{}: {e}", e.code()),
                )
            })?;
        let part = lurkbot_agent::images::keep(&state.home, &prepared).map_err(|e| {
            HttpError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                e.to_string(),
            )
        })?;
        parts.push(part);
    }
    Ok(parts)
}
