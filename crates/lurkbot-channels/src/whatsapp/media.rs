//! Media out on the Cloud API: the file is uploaded to `/{phone_number_id}/media` (a multipart
//! form with `messaging_product`, `type` and the `file`), and the message names the media id
//! Meta answered (`{"type": "image", "image": {"id": …}}`), quoting the message answered.

use lurkbot_core::multipart::Form;
use serde_json::json;

use super::graph::{Graph, answered};
use crate::ChannelError;

/// A file to upload.
pub(super) struct Upload<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) mime: &'static str,
    pub(super) name: &'a str,
}

impl Graph {
    /// Uploads `file`; Meta's media id.
    async fn upload(&self, file: &Upload<'_>) -> Result<String, ChannelError> {
        let (content_type, body) = Form::new()
            .text("messaging_product", "whatsapp")
            .text("type", file.mime)
            .file("file", file.name, file.mime, file.bytes.to_vec())
            .finish();
        let sent = self
            .http
            .post(format!("{}/{}/media", self.base, self.phone_number_id))
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .bearer_auth(&self.token)
            .body(body)
            .send()
            .await;
        let answer = answered(sent).await?;
        answer["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ChannelError::Permanent("the media upload answered no id".into()))
    }

    /// Uploads `file` and sends it to `chat` as a message of `kind` (`image`, `audio`).
    pub(super) async fn send_media(
        &self,
        chat: &str,
        kind: &str,
        file: Upload<'_>,
        reply_to: Option<&str>,
    ) -> Result<(), ChannelError> {
        let id = self.upload(&file).await?;
        let mut body = json!({"messaging_product": "whatsapp", "recipient_type": "individual",
            "to": chat, "type": kind, kind: {"id": id}});
        if let Some(id) = reply_to {
            body["context"] = json!({"message_id": id});
        }
        self.call(&format!("{}/messages", self.phone_number_id), Some(body))
            .await
            .map(|_| ())
    }
}
