//! The one trait every platform implements, and the message and error types they share.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;

/// A boxed future (the trait stays object-safe without a macro crate).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One message someone sent to the bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inbound {
    /// The platform (`telegram`).
    pub channel: &'static str,
    /// Where to answer: the chat, room or channel id.
    pub chat: String,
    /// Who wrote it: the platform's user id.
    pub sender: String,
    /// Their display or user name, for the owner's eyes only: never an identity.
    pub sender_name: String,
    /// Their platform username where it is unique and theirs alone (Telegram's `username`),
    /// used once to resolve an `@handle` in `allow_from` to their id; `None` elsewhere.
    pub handle: Option<String>,
    /// Who first wrote a forwarded message (its origin as the platform gives it): someone
    /// else's words even when the owner forwards them.
    pub forwarded_from: Option<String>,
    /// Whether the platform vouches for `sender` (always, except an e-mail whose `From:` no
    /// trusted `Authentication-Results` confirms): an unauthenticated sender is nobody known.
    pub authenticated: bool,
    /// The text (attachments are named in it, never fetched).
    pub text: String,
    /// A group chat rather than a direct message.
    pub group: bool,
    /// Whether the bot was mentioned (or replied to) in a group.
    pub mentioned: bool,
    /// The platform's message id (answers reply to it).
    pub message_id: String,
    /// A thread or topic inside the group, if any.
    pub thread: Option<String>,
    /// The platform's own id of the message where `message_id` is something else (Slack's
    /// `ts`: its `message_id` is the thread answers go to).
    pub platform_id: Option<String>,
    /// Attachments (named in `text`; fetched only under `fetch_media = true`).
    #[serde(skip)]
    pub media: Vec<Media>,
}

impl Inbound {
    /// The message from its recorded form (its `Serialize` output; attachments are not
    /// recorded: a message handled again after a restart names them in its text only).
    pub fn from_record(record: &serde_json::Value) -> Option<Self> {
        let text = |k: &str| {
            record
                .get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        };
        let flag = |k: &str| {
            record
                .get(k)
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false)
        };
        let name = text("channel")?;
        let channel = lurkbot_core::known_channel(&name)?;
        Some(Self {
            channel,
            chat: text("chat")?,
            sender: text("sender")?,
            sender_name: text("senderName").unwrap_or_default(),
            handle: text("handle"),
            forwarded_from: text("forwardedFrom"),
            authenticated: flag("authenticated"),
            text: text("text").unwrap_or_default(),
            group: flag("group"),
            mentioned: flag("mentioned"),
            message_id: text("messageId")?,
            thread: text("thread"),
            platform_id: text("platformId"),
            media: Vec::new(),
        })
    }

    /// Its source id — one message, however often the platform serves it — where the
    /// platform gives each message an id of its own (Telegram, Matrix, Discord, e-mail's
    /// `Message-ID`, Slack's `ts`, WhatsApp's `wamid`, Signal's timestamp and author); `None`
    /// on IRC (no ids).
    pub fn source_id(&self) -> Option<String> {
        if let Some(id) = self.platform_id.as_deref().filter(|id| !id.is_empty()) {
            return Some(format!("{}:{}:{id}", self.channel, self.chat));
        }
        let unique = matches!(
            self.channel,
            "telegram" | "matrix" | "discord" | "email" | "whatsapp" | "signal"
        );
        (unique && !self.message_id.is_empty())
            .then(|| format!("{}:{}:{}", self.channel, self.chat, self.message_id))
    }
}

/// One attachment of an inbound message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// Its file name (as the sender gave it; sanitised before it is used as one).
    pub name: String,
    /// Where its bytes are.
    pub source: MediaSource,
    /// A voice note (the platform marks it so): transcribed under `[stt]`.
    pub voice: bool,
}

/// A voice note to send: an OGG/Opus file.
#[derive(Debug, Clone, Copy)]
pub struct VoiceNote<'a> {
    /// The file's bytes.
    pub ogg: &'a [u8],
    /// Its length in seconds.
    pub seconds: f64,
}

/// Where an attachment's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaSource {
    /// A URL, fetched through the network policy (with the platform's bearer token when it
    /// needs one).
    Url {
        /// The URL.
        url: String,
        /// `Authorization: Bearer` for it.
        bearer: Option<String>,
    },
    /// The bytes themselves (email).
    Bytes(Vec<u8>),
    /// A platform's file id, resolved by [`Channel::media_url`] (Telegram).
    File(String),
}

/// Why a platform call failed, classified for the retry policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// Rate-limited: try again after this long (the platform's `retry_after`).
    #[error("rate-limited; retry after {secs} s: {1}", secs = .0.as_secs())]
    RetryAfter(Duration, String),
    /// A server error or a network failure: worth retrying with back-off.
    #[error("{0}")]
    Transient(String),
    /// Refused for good (blocked by the user, unknown chat, bad token): not retried.
    #[error("{0}")]
    Permanent(String),
}

/// A channel's state, as `lurkbot channels status` and the gateway's `status` show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelStatus {
    /// `starting`, `standby`, `connected`, `stale` (its liveness check failing while it
    /// reconnects), `retrying` or `failed`.
    pub state: String,
    /// The last error, if any.
    pub last_error: Option<String>,
    /// Messages received since the gateway started.
    pub received: u64,
    /// Messages sent since the gateway started.
    pub sent: u64,
    /// A linked device's link to its account (WhatsApp's linked mode), with the QR code to
    /// scan while it is not linked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkState>,
}

/// Where a linked device stands with its account (as `channels.status` carries it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LinkState {
    /// `unlinked` (starting), `qr` (a code to scan), `pairCode` (a code to type on the
    /// phone), `linked`, or `loggedOut` (unlinked from the phone: log in again).
    pub state: String,
    /// The QR code's payload while `qr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qr: Option<String>,
    /// The QR code drawn as SVG while `qr` (the web UI shows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qr_svg: Option<String>,
    /// The pairing code while `pairCode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_code: Option<String>,
    /// The account's phone number once linked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

/// A messaging platform.
pub trait Channel: Send + Sync {
    /// Its name in config.toml and in session keys (`telegram`).
    fn name(&self) -> &'static str;

    /// The longest message the platform accepts, in characters.
    fn max_chars(&self) -> usize;

    /// `markdown` in the platform's own formatting (escaped as it requires).
    fn format(&self, markdown: &str) -> String;

    /// The next messages (waits for some, as long polling or a socket does); an empty list is
    /// fine. A platform that resumes remembers where it is in memory, and on disk once told
    /// ([`Channel::acknowledge`]).
    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>>;

    /// Makes the resume point of the last [`Channel::receive`] durable (Telegram's offset,
    /// Matrix's `since`). The gateway calls it once that batch's messages are recorded, so a
    /// crash before then reads them again (and the record keeps them from being answered twice).
    fn acknowledge(&self) {}

    /// Told for each message of a batch once it is recorded (`fresh`), or found recorded
    /// before (served again), before [`Channel::acknowledge`]: a channel whose platform waits
    /// for each message's answer (a plugin's `channel.receive`) answers it here.
    fn recorded(&self, _message: &Inbound, _fresh: bool) {}

    /// Sends one message already within [`Channel::max_chars`] and formatted, as a reply to
    /// `reply_to` when given.
    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>>;

    /// Sends one message like [`Channel::send`] under `key`, an idempotency key of the
    /// caller's (the outbox entry's id and the piece): a platform that offers idempotency
    /// (Matrix's `txnId`, Discord's `nonce` with `enforce_nonce`) keeps a retried send from
    /// posting twice. The platform's id of the message, when it gives one.
    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        let _ = key;
        Box::pin(async move { self.send(chat, text, reply_to).await.map(|()| None) })
    }

    /// Shows "typing…" in `chat` (best effort).
    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()>;

    /// Sends a voice note (OGG/Opus) as the platform's voice message, or as an audio file where
    /// it has none, replying to `reply_to` when given.
    fn send_voice<'a>(
        &'a self,
        _chat: &'a str,
        _note: VoiceNote<'a>,
        _reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async {
            Err(ChannelError::Permanent(
                "this platform carries no audio".into(),
            ))
        })
    }

    /// Sends a picture, replying to `reply_to` when given. Platforms that carry none refuse
    /// it for good (the outbox keeps the refusal; `channels status` shows it).
    fn send_picture<'a>(
        &'a self,
        _chat: &'a str,
        _picture: crate::Picture<'a>,
        _reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            Err(ChannelError::Permanent(format!(
                "{} does not carry pictures from LurkBot yet",
                self.name()
            )))
        })
    }

    /// Stops what the channel runs beside its connection (a daemon it started, a client's own
    /// connection), at the gateway's stop.
    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Why the connection, though it looks open, is not known to be alive — its liveness check
    /// (a transport ping unanswered, an active probe failing; never chat silence alone) found
    /// it dead and it is reconnecting — or `None` while it is alive or has no such check.
    /// The status then says `stale`, and the owner is told when it lasts (ARCHITECTURE.md
    /// §6.1.2).
    fn stale(&self) -> Option<String> {
        None
    }

    /// A linked device's link to its account; `None` for platforms without one.
    fn link(&self) -> Option<LinkState> {
        None
    }

    /// The bytes of a platform file id that only the platform's own client can read
    /// (WhatsApp's linked device decrypts its media), at most `max`; `None` where the file is
    /// fetched from [`Channel::media_url`] instead.
    fn media_bytes<'a>(
        &'a self,
        _file: &'a str,
        _max: u64,
    ) -> BoxFuture<'a, Option<Result<Vec<u8>, ChannelError>>> {
        Box::pin(async { None })
    }

    /// The URL (and bearer token) of a platform file id (a [`MediaSource::File`]).
    fn media_url<'a>(
        &'a self,
        _file: &'a str,
    ) -> BoxFuture<'a, Result<(String, Option<String>), ChannelError>> {
        Box::pin(async {
            Err(ChannelError::Permanent(
                "this platform has no file ids".into(),
            ))
        })
    }
}
