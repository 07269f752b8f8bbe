//! `sendVoice` of the Telegram test server (`telegram_server`): the multipart upload the Bot
//! API takes for a voice message, refused as Telegram refuses it.

use std::sync::{Condvar, Mutex};

use serde_json::{Value, json};

use crate::telegram_server::{State, error};

/// A voice note the bot sent with `sendVoice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentVoice {
    /// The chat.
    pub chat_id: String,
    /// The uploaded file.
    pub bytes: Vec<u8>,
    /// The upload's `Content-Type`.
    pub content_type: Option<String>,
    /// `duration` in seconds, as sent.
    pub duration: Option<u64>,
    /// The message it replies to.
    pub reply_to: Option<i64>,
}

/// `sendVoice`, a multipart upload: `chat_id`, the `voice` file (Telegram shows OGG/Opus as a
/// voice message), `duration`, `reply_parameters` as JSON text.
pub(crate) fn send_voice(
    shared: &(Mutex<State>, Condvar),
    request: &crate::http_request::HttpRequest,
) -> (u16, Value) {
    let parts = request.multipart();
    if parts.is_empty() {
        return error(400, "Bad Request: there is no voice in the request", None);
    }
    let text = |name: &str| {
        parts
            .iter()
            .find(|p| p.name == name && p.file_name.is_none())
            .map(|p| String::from_utf8_lossy(&p.bytes).into_owned())
    };
    let Some(chat) = text("chat_id") else {
        return error(400, "Bad Request: chat_id is empty", None);
    };
    let Some(voice) = parts
        .iter()
        .find(|p| p.name == "voice" && p.file_name.is_some())
    else {
        return error(400, "Bad Request: there is no voice in the request", None);
    };
    let (lock, wake) = shared;
    let mut s = lock.lock().unwrap();
    if !s.known_chats.contains(&chat) {
        return error(400, "Bad Request: chat not found", None);
    }
    if s.blocked.contains(&chat) {
        return error(403, "Forbidden: bot was blocked by the user", None);
    }
    let reply_to = text("reply_parameters")
        .and_then(|r| serde_json::from_str::<Value>(&r).ok())
        .and_then(|r| r["message_id"].as_i64());
    s.voices.push(SentVoice {
        chat_id: chat.clone(),
        bytes: voice.bytes.clone(),
        content_type: voice.content_type.clone(),
        duration: text("duration").and_then(|d| d.parse().ok()),
        reply_to,
    });
    s.next_message += 1;
    let id = s.next_message;
    wake.notify_all();
    (
        200,
        json!({"ok": true, "result": {"message_id": id, "chat": {"id": chat},
            "voice": {"file_id": format!("sent{id}"), "file_unique_id": format!("usent{id}"),
                "duration": text("duration").and_then(|d| d.parse::<u64>().ok()).unwrap_or(0),
                "mime_type": "audio/ogg", "file_size": voice.bytes.len()}}}),
    )
}
