//! The WhatsApp Cloud API test server's state (`whatsapp_server`), which its media routes
//! (`whatsapp_media`) read and change, and the Graph API's error body.

use serde_json::json;

/// A message the business number sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The recipient's wa_id.
    pub to: String,
    /// The text.
    pub body: String,
    /// The message it quoted (`context.message_id`).
    pub reply_to: Option<String>,
}

/// A picture or voice note the business number sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMedia {
    /// The recipient's wa_id.
    pub to: String,
    /// `image` or `audio`.
    pub kind: String,
    /// The uploaded file's type.
    pub mime: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The message it quoted (`context.message_id`).
    pub reply_to: Option<String>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) token: String,
    pub(crate) phone_number_id: String,
    pub(crate) sent: Vec<Sent>,
    pub(crate) attempts: usize,
    pub(crate) rate_limits: usize,
    /// Media by id: what users sent, and what the number uploaded.
    pub(crate) media: Vec<(String, String, Vec<u8>)>,
    pub(crate) uploads: usize,
    pub(crate) media_sent: Vec<SentMedia>,
}

/// The Graph API's error body.
pub(crate) fn graph_error(code: u32, message: &str) -> String {
    json!({"error": {"message": message, "type": "OAuthException", "code": code,
        "fbtrace_id": "AbCdEfGh"}})
    .to_string()
}
