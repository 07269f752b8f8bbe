//! Telegram, over the Bot API (`[channels.telegram]`, `TELEGRAM_BOT_TOKEN` in the home's
//! `.env`): long polling with `getUpdates`, its offset kept in `channels/telegram/state.json`
//! and saved as soon as a batch arrives (a restart never hands a message over twice);
//! `sendMessage` in MarkdownV2, 4,096 characters a message, the first replying to the message
//! answered; `sendChatAction` for typing; voice notes with `sendVoice` (a multipart upload of
//! OGG/Opus). Groups answer when the bot is @-mentioned or replied to. Attachments are named in
//! the text, fetched only under `fetch_media` (voice notes under `[stt]`).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{classify, client, network};
use lurkbot_core::multipart::Form;

use crate::{BoxFuture, Channel, ChannelError, Inbound, VoiceNote};

/// The public Bot API.
pub const DEFAULT_BASE_URL: &str = "https://api.telegram.org";
/// The longest message Telegram takes.
pub const MAX_CHARS: usize = 4096;
/// How long one `getUpdates` waits for messages.
const POLL_SECONDS: u64 = 25;

/// A Telegram bot.
pub struct Telegram {
    http: reqwest::Client,
    /// `<base>/bot<token>`: never logged.
    api: String,
    state: PathBuf,
    offset: Mutex<i64>,
    /// The bot's own id and username (from `getMe`).
    me: OnceLock<(i64, String)>,
    /// How long a `getUpdates` waits for news, and the margin past it before the poll is
    /// taken for dead (a half-open connection).
    poll: (Duration, Duration),
    /// Why the last poll failed, until one answers.
    stale: crate::stale::Stale,
}

impl Telegram {
    /// A bot with `token` on `base_url` (default [`DEFAULT_BASE_URL`]), keeping its offset in
    /// `state_dir`.
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(
        base_url: Option<&str>,
        token: &str,
        state_dir: PathBuf,
    ) -> Result<Self, ChannelError> {
        let base = base_url.unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/');
        let state = state_dir.join("state.json");
        let offset = std::fs::read(&state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["offset"].as_i64())
            .unwrap_or(0);
        Ok(Self {
            http: client(Duration::from_secs(POLL_SECONDS + 15))?,
            api: format!("{base}/bot{token}"),
            state,
            offset: Mutex::new(offset),
            me: OnceLock::new(),
            poll: (Duration::from_secs(POLL_SECONDS), Duration::from_secs(15)),
            stale: crate::stale::Stale::default(),
        })
    }

    /// Long polls of `poll`, dead past `poll + margin` (tests shorten them).
    #[must_use]
    pub fn with_poll(mut self, poll: Duration, margin: Duration) -> Self {
        self.poll = (poll, margin);
        self
    }

    fn set_stale(&self, why: Option<String>) {
        self.stale.set(why);
    }

    /// Calls `method` with `body`; the `result`.
    async fn call(&self, method: &str, body: Value) -> Result<Value, ChannelError> {
        let response = self
            .http
            .post(format!("{}/{method}", self.api))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| network(method, e))?;
        Self::result(method, response).await
    }

    /// An answer's `result`, or its error classified.
    async fn result(method: &str, response: reqwest::Response) -> Result<Value, ChannelError> {
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|e| network(method, e))?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if answer["ok"] == true {
            return Ok(answer["result"].clone());
        }
        let description = answer["description"].as_str().unwrap_or("no description");
        let retry_after = answer
            .pointer("/parameters/retry_after")
            .and_then(Value::as_u64);
        Err(classify(
            status,
            &format!("{method}: {description}"),
            retry_after,
        ))
    }

    /// Calls `method` with a multipart form (an upload); the `result`.
    async fn upload(&self, method: &str, form: Form) -> Result<Value, ChannelError> {
        let (kind, body) = form.finish();
        let response = self
            .http
            .post(format!("{}/{method}", self.api))
            .header(reqwest::header::CONTENT_TYPE, kind)
            .body(body)
            .send()
            .await
            .map_err(|e| network(method, e))?;
        Self::result(method, response).await
    }

    /// The bot's id and username, asked once.
    async fn me(&self) -> Result<(i64, String), ChannelError> {
        if let Some(me) = self.me.get() {
            return Ok(me.clone());
        }
        let me = self.call("getMe", json!({})).await?;
        let id = me["id"].as_i64().unwrap_or(0);
        let name = me["username"].as_str().unwrap_or_default().to_string();
        Ok(self.me.get_or_init(|| (id, name)).clone())
    }

    fn save_offset(&self, offset: i64) {
        if let Some(dir) = self.state.parent()
            && let Err(e) = lurkbot_core::create_private_dir(dir)
        {
            tracing::warn!(error = %e, "telegram offset not saved");
            return;
        }
        let bytes = json!({"offset": offset}).to_string();
        if let Err(e) = lurkbot_core::write_atomic_with_mode(&self.state, bytes.as_bytes(), 0o600) {
            tracing::warn!(error = %e, "telegram offset not saved");
        }
    }

    /// One update as an [`Inbound`], if it is a message.
    fn inbound(update: &Value, me: &(i64, String)) -> Option<Inbound> {
        let message = update.get("message")?;
        let chat = message.get("chat")?;
        let from = message.get("from")?;
        if from["is_bot"] == true {
            return None;
        }
        let mut text = message["text"]
            .as_str()
            .or(message["caption"].as_str())
            .unwrap_or_default()
            .to_string();
        let mut media = Vec::new();
        for kind in ["photo", "document", "voice", "audio", "video", "sticker"] {
            if let Some(item) = message.get(kind) {
                // A photo comes in sizes: the last is the largest.
                let item = item
                    .as_array()
                    .and_then(|sizes| sizes.last())
                    .unwrap_or(item);
                let name = item["file_name"].as_str().unwrap_or_default();
                text.push_str(&format!("\n[attachment: {kind} {name}] (not opened)"));
                if let Some(id) = item["file_id"].as_str() {
                    let name = if name.is_empty() {
                        format!(
                            "{kind}-{}",
                            item["file_unique_id"].as_str().unwrap_or("file")
                        )
                    } else {
                        name.to_string()
                    };
                    media.push(crate::Media {
                        name,
                        source: crate::MediaSource::File(id.to_string()),
                        voice: kind == "voice",
                    });
                }
            }
        }
        let group = chat["type"] != "private";
        let handle = format!("@{}", me.1);
        let mentioned = !me.1.is_empty() && text.contains(&handle)
            || message
                .pointer("/reply_to_message/from/id")
                .and_then(Value::as_i64)
                == Some(me.0);
        let sender_name = from["username"]
            .as_str()
            .or(from["first_name"].as_str())
            .unwrap_or_default()
            .to_string();
        Some(Inbound {
            channel: "telegram",
            chat: chat["id"].as_i64()?.to_string(),
            sender: from["id"].as_i64()?.to_string(),
            sender_name,
            handle: from["username"].as_str().map(str::to_string),
            forwarded_from: forward_origin(message),
            authenticated: true,
            text: text.trim().to_string(),
            group,
            mentioned,
            message_id: message["message_id"].as_i64()?.to_string(),
            thread: message["message_thread_id"].as_i64().map(|t| t.to_string()),
            platform_id: None,
            media,
        })
    }
}

/// Who first wrote a forwarded message: Bot API 7's `forward_origin` (a user, a hidden user, a
/// chat or a channel), else the older `forward_from*` fields; `None` for the sender's own words.
fn forward_origin(message: &Value) -> Option<String> {
    let user = |u: &Value| {
        let name = [u["first_name"].as_str(), u["last_name"].as_str()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        format!("{name} (telegram user {})", u["id"])
    };
    let chat = |c: &Value| {
        format!(
            "{} (telegram chat {})",
            c["title"].as_str().unwrap_or_default(),
            c["id"]
        )
    };
    if let Some(origin) = message.get("forward_origin") {
        return Some(match origin["type"].as_str() {
            Some("user") => user(&origin["sender_user"]),
            Some("hidden_user") => format!(
                "{} (a hidden telegram user)",
                origin["sender_user_name"].as_str().unwrap_or("someone")
            ),
            Some("chat") => chat(&origin["sender_chat"]),
            Some("channel") => chat(&origin["chat"]),
            _ => "someone else".to_string(),
        });
    }
    if let Some(u) = message.get("forward_from") {
        return Some(user(u));
    }
    if let Some(c) = message.get("forward_from_chat") {
        return Some(chat(c));
    }
    message["forward_sender_name"]
        .as_str()
        .map(|n| format!("{n} (a hidden telegram user)"))
}

impl Channel for Telegram {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        markdown_v2(markdown)
    }

    fn acknowledge(&self) {
        let offset = self.offset.lock().map(|o| *o).unwrap_or(0);
        if offset > 0 {
            self.save_offset(offset);
        }
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let me = self.me().await?;
            let offset = self.offset.lock().map(|o| *o).unwrap_or(0);
            let (poll, margin) = self.poll;
            let asked = self.call(
                "getUpdates",
                json!({"offset": offset, "timeout": poll.as_secs(),
                    "allowed_updates": ["message"]}),
            );
            // A long poll that outlives its wait is a dead connection (§6.1.2), never silence.
            let updates = match tokio::time::timeout(poll + margin, asked).await {
                Ok(Ok(updates)) => {
                    self.set_stale(None);
                    updates
                }
                Ok(Err(e)) => {
                    self.set_stale(Some(e.to_string()));
                    return Err(e);
                }
                Err(_) => {
                    let why = format!(
                        "Telegram's long poll did not answer within {} s: polling again",
                        (poll + margin).as_secs()
                    );
                    self.set_stale(Some(why.clone()));
                    return Err(ChannelError::Transient(why));
                }
            };
            let updates = updates.as_array().cloned().unwrap_or_default();
            let Some(last) = updates.iter().filter_map(|u| u["update_id"].as_i64()).max() else {
                return Ok(Vec::new());
            };
            // The next getUpdates confirms these to Telegram; the gateway records them first.
            if let Ok(mut o) = self.offset.lock() {
                *o = last + 1;
            }
            Ok(updates
                .iter()
                .filter_map(|u| Self::inbound(u, &me))
                .collect())
        })
    }

    fn stale(&self) -> Option<String> {
        self.stale.get()
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let mut body = json!({"chat_id": chat, "text": text, "parse_mode": "MarkdownV2"});
            if let Some(id) = reply_to.and_then(|r| r.parse::<i64>().ok()) {
                body["reply_parameters"] =
                    json!({"message_id": id, "allow_sending_without_reply": true});
            }
            self.call("sendMessage", body).await.map(|_| ())
        })
    }

    /// Telegram offers no idempotency: the message's id is kept (the window for a duplicate is
    /// one send, ARCHITECTURE.md §6.3).
    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        _key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            let mut body = json!({"chat_id": chat, "text": text, "parse_mode": "MarkdownV2"});
            if let Some(id) = reply_to.and_then(|r| r.parse::<i64>().ok()) {
                body["reply_parameters"] =
                    json!({"message_id": id, "allow_sending_without_reply": true});
            }
            let sent = self.call("sendMessage", body).await?;
            Ok(sent["message_id"].as_i64().map(|id| id.to_string()))
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: VoiceNote<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            // `sendVoice`: OGG/Opus is shown as a voice message.
            let mut form = Form::new()
                .text("chat_id", chat)
                .text("duration", &(note.seconds.ceil() as u64).to_string());
            if let Some(id) = reply_to.and_then(|r| r.parse::<i64>().ok()) {
                let reply = json!({"message_id": id, "allow_sending_without_reply": true});
                form = form.text("reply_parameters", &reply.to_string());
            }
            let form = form.file("voice", "voice.ogg", "audio/ogg", note.ogg.to_vec());
            self.upload("sendVoice", form).await.map(|_| ())
        })
    }

    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self
                .call(
                    "sendChatAction",
                    json!({"chat_id": chat, "action": "typing"}),
                )
                .await;
        })
    }

    fn media_url<'a>(
        &'a self,
        file: &'a str,
    ) -> BoxFuture<'a, Result<(String, Option<String>), ChannelError>> {
        Box::pin(async move {
            let found = self.call("getFile", json!({"file_id": file})).await?;
            let path = found["file_path"]
                .as_str()
                .ok_or_else(|| ChannelError::Permanent("getFile answered no file_path".into()))?;
            // `<base>/file/bot<token>/<path>`: the token is in the URL, which is never logged.
            let file_api = self.api.replacen("/bot", "/file/bot", 1);
            Ok((format!("{file_api}/{path}"), None))
        })
    }
}

/// Markdown as Telegram's MarkdownV2: code spans and fenced blocks kept (only `` ` `` and `\`
/// escaped inside), `**bold**` as `*bold*`, every other special character escaped, so the
/// text shows as written and a message is never refused for its formatting.
pub fn markdown_v2(markdown: &str) -> String {
    const SPECIAL: &str = "_*[]()~`>#+-=|{}.!\\";
    let escape = |text: &str, out: &mut String| {
        for c in text.chars() {
            if SPECIAL.contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
    };
    let code = |text: &str, out: &mut String| {
        for c in text.chars() {
            if c == '`' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    };
    let mut out = String::with_capacity(markdown.len() + 16);
    let mut rest = markdown;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("```")
            && let Some(end) = after.find("```")
        {
            out.push_str("```");
            code(&after[..end], &mut out);
            out.push_str("```");
            rest = &after[end + 3..];
        } else if let Some(after) = rest.strip_prefix('`')
            && let Some(end) = after.find('`')
        {
            out.push('`');
            code(&after[..end], &mut out);
            out.push('`');
            rest = &after[end + 1..];
        } else if let Some(after) = rest.strip_prefix("**")
            && let Some(end) = after.find("**")
            && end > 0
        {
            out.push('*');
            escape(&after[..end], &mut out);
            out.push('*');
            rest = &after[end + 2..];
        } else {
            let next = rest[1..].find(['`', '*']).map_or(rest.len(), |i| i + 1);
            escape(&rest[..next], &mut out);
            rest = &rest[next..];
        }
    }
    out
}

#[cfg(test)]
mod liveness_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_v2_escapes_all_but_code_and_bold() {
        assert_eq!(markdown_v2("Done. 1+1=2!"), "Done\\. 1\\+1\\=2\\!");
        assert_eq!(markdown_v2("**bold** move_it"), "*bold* move\\_it");
        assert_eq!(markdown_v2("run `a_b.sh` now."), "run `a_b.sh` now\\.");
        assert_eq!(markdown_v2("```\nx = `1`\n```"), "```\nx = \\`1\\`\n```");
        assert_eq!(markdown_v2("a * b ` c"), "a \\* b \\` c");
    }

    #[test]
    fn updates_become_inbound_messages() {
        let me = (99, "lurk_bot".to_string());
        let dm = json!({"update_id": 1, "message": {"message_id": 5, "text": "hi",
            "from": {"id": 42, "is_bot": false, "username": "ada"},
            "chat": {"id": 42, "type": "private"}}});
        let m = Telegram::inbound(&dm, &me).unwrap();
        assert_eq!(
            (m.chat.as_str(), m.sender.as_str(), m.group),
            ("42", "42", false)
        );
        let group = json!({"update_id": 2, "message": {"message_id": 6, "caption": "look @lurk_bot",
            "document": {"file_name": "a.pdf"}, "message_thread_id": 3,
            "from": {"id": 42, "is_bot": false, "first_name": "Ada"},
            "chat": {"id": -100, "type": "supergroup"}}});
        let m = Telegram::inbound(&group, &me).unwrap();
        assert!(m.group && m.mentioned);
        assert!(
            m.text.contains("[attachment: document a.pdf] (not opened)"),
            "{}",
            m.text
        );
        assert_eq!(m.thread.as_deref(), Some("3"));
        let bot = json!({"update_id": 3, "message": {"message_id": 7, "text": "x",
            "from": {"id": 7, "is_bot": true}, "chat": {"id": 7, "type": "private"}}});
        assert!(Telegram::inbound(&bot, &me).is_none());
    }
}
