//! WhatsApp through Meta's WhatsApp Business Cloud API (`[channels.whatsapp] mode = "cloud"`,
//! ARCHITECTURE.md §6.1.1). Meta pushes messages to the gateway's webhook
//! (`/channels/whatsapp/webhook`, [`CloudWebhook`]): the verification `GET` is answered with
//! its challenge when the verify token matches; a `POST` is refused unless
//! `X-Hub-Signature-256` is the HMAC-SHA256 of its raw body under the app secret (checked
//! before anything is parsed), and answered 200 only once the receive loop has recorded its
//! messages ([`Channel::acknowledge`]) — a redelivered `wamid` is then answered once. Replies
//! go to `<base_url>/<phone_number_id>/messages` with the access token, 4,096 characters a
//! message, quoting the message answered; Markdown becomes WhatsApp's `*bold*`, `_italic_`,
//! `~strike~`. Attachments arrive as media ids, named in the text and fetched under
//! `fetch_media` through [`Channel::media_url`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::http::client;
pub use crate::whatsapp_text::whatsapp_text;
use crate::{BoxFuture, Channel, ChannelError, Inbound, Media, MediaSource, Picture, VoiceNote};

mod graph;
mod media;

use graph::Graph;

/// Meta's Graph API.
pub const DEFAULT_BASE_URL: &str = "https://graph.facebook.com/v23.0";
/// The longest text message WhatsApp takes.
pub const MAX_CHARS: usize = 4096;
/// How long a webhook waits for its messages to be recorded before it answers 503 (Meta then
/// delivers it again).
const RECORD_WAIT: Duration = Duration::from_secs(20);
/// Webhook deliveries queued for the receive loop at most.
const QUEUE: usize = 64;

/// The `.env` secrets of the Cloud API.
#[derive(Clone)]
pub struct CloudSecrets {
    /// `WHATSAPP_ACCESS_TOKEN`: sends messages and fetches media.
    pub access_token: String,
    /// `WHATSAPP_APP_SECRET`: the key of every webhook's signature.
    pub app_secret: String,
    /// `WHATSAPP_VERIFY_TOKEN`: what Meta's verification request must present.
    pub verify_token: String,
}

/// One webhook's messages, and who to tell once they are recorded.
type Delivery = (Vec<Inbound>, oneshot::Sender<()>);

/// A message of ours WhatsApp says it could not deliver (a `failed` status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// The message's `wamid` (as the send answered it).
    pub wamid: String,
    /// WhatsApp's reason, with its code (131047: outside the 24-hour window).
    pub error: String,
}

/// How the gateway answers one webhook request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookAnswer {
    /// 200 with the challenge to echo: the callback URL is verified.
    Challenge(String),
    /// 200: the messages are recorded (or there were none); these messages of ours failed
    /// (the gateway marks them so, not retried).
    Statuses(Vec<Undelivered>),
    /// 403: a wrong verify token, or a missing or wrong signature (nothing recorded).
    Forbidden(&'static str),
    /// 400: a signed body that is not a webhook.
    BadRequest(String),
    /// 503: not recorded in time (Meta retries).
    Unavailable(&'static str),
}

/// The webhook side of the channel: checks what Meta sends and hands its messages to the
/// receive loop.
pub struct CloudWebhook {
    phone_number_id: String,
    app_secret: ring::hmac::Key,
    verify_token: String,
    deliveries: mpsc::Sender<Delivery>,
}

impl CloudWebhook {
    /// Meta's verification request (`hub.mode`, `hub.verify_token`, `hub.challenge`): the
    /// challenge to echo when the mode is `subscribe` and the token is the verify token.
    pub fn verify(
        &self,
        mode: Option<&str>,
        token: Option<&str>,
        challenge: Option<&str>,
    ) -> WebhookAnswer {
        let token_ok = token.is_some_and(|t| lurkbot_core::secret_matches(&self.verify_token, t));
        match (mode, challenge) {
            (Some("subscribe"), Some(challenge)) if token_ok => {
                WebhookAnswer::Challenge(challenge.to_string())
            }
            _ => WebhookAnswer::Forbidden("the verify token does not match"),
        }
    }

    /// A notification (`POST`): its signature checked on the raw `body` first; its messages
    /// handed to the receive loop, answered once they are recorded.
    pub async fn deliver(&self, signature: Option<&str>, body: &[u8]) -> WebhookAnswer {
        let Some(tag) = signature
            .and_then(|s| s.strip_prefix("sha256="))
            .and_then(decode_hex)
        else {
            return WebhookAnswer::Forbidden("X-Hub-Signature-256 is missing or malformed");
        };
        if ring::hmac::verify(&self.app_secret, body, &tag).is_err() {
            return WebhookAnswer::Forbidden("X-Hub-Signature-256 does not match the body");
        }
        let Ok(notification) = serde_json::from_slice::<Value>(body) else {
            return WebhookAnswer::BadRequest("the body is not JSON".into());
        };
        let batch = messages_of(&notification, &self.phone_number_id);
        let failed = failures_of(&notification, &self.phone_number_id);
        if batch.is_empty() {
            return WebhookAnswer::Statuses(failed);
        }
        let (recorded, told) = oneshot::channel();
        if self.deliveries.send((batch, recorded)).await.is_err() {
            return WebhookAnswer::Unavailable("the WhatsApp channel is not receiving");
        }
        match tokio::time::timeout(RECORD_WAIT, told).await {
            Ok(Ok(())) => WebhookAnswer::Statuses(failed),
            _ => WebhookAnswer::Unavailable("the messages were not recorded in time"),
        }
    }
}

/// The messages of one notification to `phone_number_id`, in order (statuses and other
/// numbers' changes are not messages).
fn messages_of(notification: &Value, phone_number_id: &str) -> Vec<Inbound> {
    let mut found = Vec::new();
    let entries = notification["entry"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for change in entries
        .iter()
        .flat_map(|e| e["changes"].as_array().map_or(&[][..], Vec::as_slice))
    {
        let value = &change["value"];
        if change["field"] != "messages" || value["metadata"]["phone_number_id"] != phone_number_id
        {
            continue;
        }
        let name_of = |wa_id: &str| {
            value["contacts"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["wa_id"] == wa_id))
                .and_then(|c| c["profile"]["name"].as_str())
                .unwrap_or_default()
                .to_string()
        };
        for message in value["messages"].as_array().map_or(&[][..], Vec::as_slice) {
            let (Some(from), Some(id)) = (message["from"].as_str(), message["id"].as_str()) else {
                continue;
            };
            let (text, media) = content_of(message);
            found.push(Inbound {
                channel: "whatsapp",
                chat: from.to_string(),
                sender: from.to_string(),
                sender_name: name_of(from),
                handle: None,
                forwarded_from: (message["context"]["forwarded"] == true)
                    .then(|| "someone else (forwarded)".to_string()),
                authenticated: true,
                text,
                group: false,
                mentioned: false,
                message_id: id.to_string(),
                thread: None,
                platform_id: None,
                media,
            });
        }
    }
    found
}

/// The `failed` statuses of one notification to `phone_number_id`: our messages WhatsApp
/// could not deliver, with why.
fn failures_of(notification: &Value, phone_number_id: &str) -> Vec<Undelivered> {
    let entries = notification["entry"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    entries
        .iter()
        .flat_map(|e| e["changes"].as_array().map_or(&[][..], Vec::as_slice))
        .filter(|c| {
            c["field"] == "messages" && c["value"]["metadata"]["phone_number_id"] == phone_number_id
        })
        .flat_map(|c| {
            c["value"]["statuses"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
        })
        .filter(|s| s["status"] == "failed")
        .filter_map(|s| {
            let error = &s["errors"][0];
            Some(Undelivered {
                wamid: s["id"].as_str()?.to_string(),
                error: format!(
                    "WhatsApp did not deliver it: {} (code {})",
                    error["message"]
                        .as_str()
                        .or(error["title"].as_str())
                        .unwrap_or("failed"),
                    error["code"]
                ),
            })
        })
        .collect()
}

/// A message's text and attachments (named in the text).
fn content_of(message: &Value) -> (String, Vec<Media>) {
    let kind = message["type"].as_str().unwrap_or_default();
    match kind {
        "text" => (
            message["text"]["body"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            Vec::new(),
        ),
        "image" | "audio" | "video" | "document" | "sticker" => {
            let part = &message[kind];
            let caption = part["caption"].as_str().unwrap_or_default();
            let voice = kind == "audio" && part["voice"] == true;
            let name = part["filename"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{kind}{}", extension(part["mime_type"].as_str())));
            let shown = if voice { "voice note" } else { kind };
            let text = format!("{caption}\n[{shown} attached: {name}]")
                .trim()
                .to_string();
            let media = part["id"]
                .as_str()
                .map(|id| Media {
                    name,
                    source: MediaSource::File(id.to_string()),
                    voice,
                })
                .into_iter()
                .collect();
            (text, media)
        }
        "location" => {
            let at = &message["location"];
            (
                format!("[location: {}, {}]", at["latitude"], at["longitude"]),
                Vec::new(),
            )
        }
        other => (format!("[a {other} message]"), Vec::new()),
    }
}

/// A file extension for a MIME type WhatsApp sends.
fn extension(mime: Option<&str>) -> &'static str {
    match mime.map(|m| m.split(';').next().unwrap_or(m).trim()) {
        Some("image/jpeg") => ".jpg",
        Some("image/png") => ".png",
        Some("image/webp") => ".webp",
        Some("audio/ogg") => ".ogg",
        Some("audio/mpeg") => ".mp3",
        Some("video/mp4") => ".mp4",
        Some("application/pdf") => ".pdf",
        _ => "",
    }
}

/// `hex` as bytes (a signature: an even number of hex digits).
fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A WhatsApp business number on the Cloud API.
pub struct WhatsAppCloud {
    graph: Graph,
    inbox: tokio::sync::Mutex<mpsc::Receiver<Delivery>>,
    /// Who waits for the last batch received to be recorded.
    pending: Mutex<Option<oneshot::Sender<()>>>,
    webhook: Arc<CloudWebhook>,
}

impl WhatsAppCloud {
    /// The number `phone_number_id` on `base_url` (default [`DEFAULT_BASE_URL`]).
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(
        base_url: Option<&str>,
        phone_number_id: &str,
        secrets: CloudSecrets,
    ) -> Result<Self, ChannelError> {
        let (deliveries, inbox) = mpsc::channel(QUEUE);
        let webhook = Arc::new(CloudWebhook {
            phone_number_id: phone_number_id.to_string(),
            app_secret: ring::hmac::Key::new(
                ring::hmac::HMAC_SHA256,
                secrets.app_secret.as_bytes(),
            ),
            verify_token: secrets.verify_token,
            deliveries,
        });
        Ok(Self {
            graph: Graph {
                http: client(Duration::from_secs(60))?,
                base: base_url
                    .unwrap_or(DEFAULT_BASE_URL)
                    .trim_end_matches('/')
                    .to_string(),
                phone_number_id: phone_number_id.to_string(),
                token: secrets.access_token,
            },
            inbox: tokio::sync::Mutex::new(inbox),
            pending: Mutex::new(None),
            webhook,
        })
    }

    /// The webhook that feeds this channel (the gateway routes Meta's requests to it).
    pub fn webhook(&self) -> Arc<CloudWebhook> {
        self.webhook.clone()
    }
}

impl Channel for WhatsAppCloud {
    fn name(&self) -> &'static str {
        "whatsapp"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        whatsapp_text(markdown)
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let mut inbox = self.inbox.lock().await;
            let Some((batch, recorded)) = inbox.recv().await else {
                return Err(ChannelError::Permanent("the webhook is gone".into()));
            };
            if let Ok(mut pending) = self.pending.lock() {
                *pending = Some(recorded);
            }
            Ok(batch)
        })
    }

    fn acknowledge(&self) {
        let waiting = self.pending.lock().ok().and_then(|mut p| p.take());
        if let Some(waiting) = waiting {
            let _ = waiting.send(());
        }
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move { self.send_once(chat, text, reply_to, "").await.map(|_| ()) })
    }

    /// WhatsApp has no idempotency key for sends; the `wamid` it answers is kept, so a later
    /// `failed` status finds its outbox entry.
    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        _key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            let mut body = json!({"messaging_product": "whatsapp", "recipient_type": "individual",
                "to": chat, "type": "text", "text": {"body": text, "preview_url": false}});
            if let Some(id) = reply_to {
                body["context"] = json!({"message_id": id});
            }
            let answer = self
                .graph
                .call(
                    &format!("{}/messages", self.graph.phone_number_id),
                    Some(body),
                )
                .await?;
            Ok(answer["messages"][0]["id"].as_str().map(str::to_string))
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: VoiceNote<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let upload = media::Upload {
                bytes: note.ogg,
                mime: "audio/ogg",
                name: "voice.ogg",
            };
            self.graph.send_media(chat, "audio", upload, reply_to).await
        })
    }

    fn send_picture<'a>(
        &'a self,
        chat: &'a str,
        picture: Picture<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let upload = media::Upload {
                bytes: picture.bytes,
                mime: picture.mime,
                name: picture.name,
            };
            self.graph.send_media(chat, "image", upload, reply_to).await
        })
    }

    fn typing<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, ()> {
        // The Cloud API's typing indicator needs the message id it answers, which this
        // call does not carry: nothing is shown.
        Box::pin(async {})
    }

    fn media_url<'a>(
        &'a self,
        file: &'a str,
    ) -> BoxFuture<'a, Result<(String, Option<String>), ChannelError>> {
        Box::pin(async move {
            let media = self.graph.call(file, None).await?;
            let url = media["url"]
                .as_str()
                .ok_or_else(|| ChannelError::Permanent(format!("media {file} has no url")))?;
            Ok((url.to_string(), Some(self.graph.token.clone())))
        })
    }
}

#[cfg(test)]
mod tests;
