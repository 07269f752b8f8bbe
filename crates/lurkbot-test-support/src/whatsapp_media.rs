//! Media out on the WhatsApp Cloud API test server (`whatsapp_server`), from Meta's
//! documentation: `POST /<phone_number_id>/media` takes a multipart form with
//! `messaging_product=whatsapp`, `type` and the `file`, refuses types WhatsApp does not carry
//! (images: JPEG and PNG up to 5 MB; audio: OGG/Opus, MP3, AAC, AMR, MP4 up to 16 MB), and
//! answers the media id; a message of `type` `image` or `audio` must name an uploaded id.

use serde_json::{Value, json};

use crate::http_request::HttpRequest;
use crate::whatsapp_state::{SentMedia, State, graph_error};

const IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png"];
const AUDIO_TYPES: &[&str] = &[
    "audio/ogg",
    "audio/mpeg",
    "audio/aac",
    "audio/amr",
    "audio/mp4",
];

/// `POST /<phone_number_id>/media`.
pub(crate) fn upload(state: &mut State, request: &HttpRequest) -> (u16, String) {
    let parts = request.multipart();
    let field = |name: &str| {
        parts
            .iter()
            .find(|p| p.name == name && p.file_name.is_none())
            .map(|p| String::from_utf8_lossy(&p.bytes).into_owned())
    };
    if field("messaging_product").as_deref() != Some("whatsapp") {
        return (
            400,
            graph_error(100, "(#100) The parameter messaging_product is required."),
        );
    }
    let Some(file) = parts
        .iter()
        .find(|p| p.name == "file" && p.file_name.is_some())
    else {
        return (
            400,
            graph_error(100, "(#100) The parameter file is required."),
        );
    };
    let mime = file
        .content_type
        .clone()
        .or_else(|| field("type"))
        .unwrap_or_default();
    let base = mime
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let limit = if IMAGE_TYPES.contains(&base.as_str()) {
        5 << 20
    } else if AUDIO_TYPES.contains(&base.as_str()) {
        16 << 20
    } else {
        return (
            400,
            graph_error(
                100,
                &format!(
                    "(#100) Param file must be a file with one of the following types: {}, {}. Received file of type '{mime}'.",
                    IMAGE_TYPES.join(", "),
                    AUDIO_TYPES.join(", ")
                ),
            ),
        );
    };
    if file.bytes.len() > limit {
        return (
            400,
            graph_error(
                131053,
                "(#131053) Media upload error: the file is too large",
            ),
        );
    }
    state.uploads += 1;
    let id = format!("up{}", state.uploads);
    state.media.push((id.clone(), base, file.bytes.clone()));
    (200, json!({"id": id}).to_string())
}

/// A message of `type` `image` or `audio`: its media must have been uploaded.
pub(crate) fn media_message(state: &mut State, to: &str, message: &Value) -> (u16, String) {
    let kind = message["type"].as_str().unwrap_or_default();
    let Some(id) = message[kind]["id"].as_str() else {
        return (
            400,
            graph_error(
                100,
                &format!("(#100) The parameter {kind}['id'] is required."),
            ),
        );
    };
    let Some((_, mime, bytes)) = state.media.iter().find(|(i, _, _)| i == id).cloned() else {
        return (
            400,
            graph_error(
                131053,
                &format!("(#131053) Media upload error: unknown media id {id}"),
            ),
        );
    };
    let fits = match kind {
        "image" => IMAGE_TYPES.contains(&mime.as_str()),
        _ => AUDIO_TYPES.contains(&mime.as_str()),
    };
    if !fits {
        return (
            400,
            graph_error(
                100,
                &format!("(#100) A {kind} message cannot carry {mime}."),
            ),
        );
    }
    state.media_sent.push(SentMedia {
        to: to.to_string(),
        kind: kind.to_string(),
        mime,
        bytes,
        reply_to: message["context"]["message_id"]
            .as_str()
            .map(str::to_string),
    });
    let id = format!("wamid.MEDIA{}", state.media_sent.len());
    (
        200,
        json!({"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": id}]})
        .to_string(),
    )
}
