//! Matrix, over the client-server API (`[channels.matrix]`; `MATRIX_HOMESERVER` and either
//! `MATRIX_ACCESS_TOKEN` or `MATRIX_USER` + `MATRIX_PASSWORD` in the home's `.env`): `/sync`
//! long polling with its `since` kept in `channels/matrix/state.json` (the first start skips
//! the history, so old messages are never answered), `m.room.message` sends with a
//! transaction id, typing notices, voice notes as `m.audio` marked as voice (MSC3245) after an
//! upload to the media repository. A room of two members is a direct message; any other is a
//! group, answered when the bot is mentioned. Invites are joined when the inviter may talk to
//! the bot, or — for a direct room under `pairing` or `open` — so a stranger can receive their
//! pairing code. End-to-end encrypted rooms are not supported yet: their messages cannot be
//! read and are skipped with a log line.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{classify, client, network};
use crate::{BoxFuture, Channel, ChannelError, Inbound, VoiceNote};

/// The longest message sent at once (Matrix caps an event at 65,536 bytes).
pub const MAX_CHARS: usize = 16_000;
/// How long one `/sync` waits for events.
const POLL: Duration = Duration::from_secs(25);
/// How much longer than its wait a `/sync` may take before its connection is taken for dead.
const MARGIN: Duration = Duration::from_secs(15);

/// Decides whether to join a room the bot was invited to: `(inviter, direct)`.
pub type InvitePolicy = Box<dyn Fn(&str, bool) -> bool + Send + Sync>;

/// The device a password sign-in uses, every time.
const DEVICE_ID: &str = "LURKBOT";

/// How the bot signs in.
pub enum Credentials {
    /// An access token.
    Token(String),
    /// A user and password (`m.login.password`).
    Password {
        /// `@bot:example.org` or `bot`.
        user: String,
        /// The password.
        password: String,
    },
}

/// A Matrix bot account.
pub struct Matrix {
    http: reqwest::Client,
    base: String,
    credentials: Credentials,
    /// The access token and the bot's user id, once signed in.
    session: tokio::sync::OnceCell<(String, String)>,
    state: PathBuf,
    since: Mutex<Option<String>>,
    /// Joined member counts by room (two means a direct message).
    members: Mutex<HashMap<String, u64>>,
    invites: InvitePolicy,
    /// A sync's wait and the margin past which it is dead (§6.1.2).
    poll: (Duration, Duration),
    stale: crate::stale::Stale,
}

impl Matrix {
    /// A bot on `homeserver`, keeping its sync position in `state_dir`; `invites` decides which
    /// invitations it accepts.
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(
        homeserver: &str,
        credentials: Credentials,
        state_dir: PathBuf,
        invites: InvitePolicy,
    ) -> Result<Self, ChannelError> {
        let state = state_dir.join("state.json");
        let since = std::fs::read(&state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["since"].as_str().map(str::to_string));
        Ok(Self {
            http: client(POLL + MARGIN)?,
            base: homeserver.trim_end_matches('/').to_string(),
            credentials,
            session: tokio::sync::OnceCell::new(),
            state,
            since: Mutex::new(since),
            members: Mutex::new(HashMap::new()),
            invites,
            poll: (POLL, MARGIN),
            stale: crate::stale::Stale::default(),
        })
    }

    /// Syncs that wait `poll`, dead past `poll + margin` (tests shorten them).
    #[must_use]
    pub fn with_poll(mut self, poll: Duration, margin: Duration) -> Self {
        self.poll = (poll, margin);
        self
    }

    /// One `/sync` at `path`, bounded: a sync that outlives its wait plus the margin is a dead
    /// connection (a half-open one says nothing), never chat silence — the channel is stale
    /// until a sync answers.
    async fn sync(&self, path: &str, token: &str) -> Result<Value, ChannelError> {
        let (poll, margin) = self.poll;
        let asked = self.request(reqwest::Method::GET, path, Some(token), None);
        match tokio::time::timeout(poll + margin, asked).await {
            Ok(Ok(sync)) => {
                self.stale.set(None);
                Ok(sync)
            }
            Ok(Err(e)) => {
                self.stale.set(Some(e.to_string()));
                Err(e)
            }
            Err(_) => {
                let why = format!(
                    "the homeserver's /sync did not answer within {} s: syncing again",
                    (poll + margin).as_secs()
                );
                self.stale.set(Some(why.clone()));
                Err(ChannelError::Transient(why))
            }
        }
    }

    /// One request; the JSON answer.
    async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Result<Value, ChannelError> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        Self::answer(request).await
    }

    /// Sends `body` as an `m.room.message` in `room` (with a fresh transaction id), as a reply
    /// to the event `reply_to` when given.
    async fn room_message(
        &self,
        token: &str,
        room: &str,
        body: Value,
        reply_to: Option<&str>,
    ) -> Result<(), ChannelError> {
        let txn = format!("lurkbot{}", lurkbot_core::random_hex(8));
        self.room_message_as(token, room, body, reply_to, &txn)
            .await
            .map(|_| ())
    }

    /// Sends a room message under the transaction id `txn`: the homeserver sends one event per
    /// id, however often the same request is made. The event's id.
    async fn room_message_as(
        &self,
        token: &str,
        room: &str,
        mut body: Value,
        reply_to: Option<&str>,
        txn: &str,
    ) -> Result<Option<String>, ChannelError> {
        if let Some(event) = reply_to.filter(|r| !r.is_empty()) {
            body["m.relates_to"] = json!({"m.in_reply_to": {"event_id": event}});
        }
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
            encode(room),
            encode(txn)
        );
        let sent = self
            .request(reqwest::Method::PUT, &path, Some(token), Some(body))
            .await?;
        Ok(sent["event_id"].as_str().map(str::to_string))
    }

    /// Uploads `bytes` to the homeserver's media repository; their `mxc://` URI.
    async fn upload(
        &self,
        token: &str,
        file_name: &str,
        mime: &str,
        bytes: Vec<u8>,
    ) -> Result<String, ChannelError> {
        let request = self
            .http
            .post(format!(
                "{}/_matrix/media/v3/upload?filename={}",
                self.base,
                encode(file_name)
            ))
            .bearer_auth(token)
            .header(reqwest::header::CONTENT_TYPE, mime)
            .body(bytes);
        let answer = Self::answer(request).await?;
        answer["content_uri"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ChannelError::Permanent("the upload answered no content_uri".into()))
    }

    /// Sends `request`; the JSON answer, or its error classified.
    async fn answer(request: reqwest::RequestBuilder) -> Result<Value, ChannelError> {
        let response = request.send().await.map_err(|e| network("matrix", e))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|e| network("matrix", e))?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return Ok(answer);
        }
        let description = format!(
            "{} {}",
            answer["errcode"].as_str().unwrap_or("M_UNKNOWN"),
            answer["error"].as_str().unwrap_or_default()
        );
        let retry = answer["retry_after_ms"]
            .as_u64()
            .map(|ms| ms.div_ceil(1000));
        Err(classify(status, &description, retry))
    }

    /// The access token and the bot's user id (signing in once).
    async fn session(&self) -> Result<(String, String), ChannelError> {
        self.session
            .get_or_try_init(|| async {
                let token = match &self.credentials {
                    Credentials::Token(token) => token.clone(),
                    Credentials::Password { user, password } => {
                        // One device for every start: a restart neither piles up devices
                        // nor leaves the transaction ids (scoped to the device) of the
                        // outbox's sends behind.
                        let body = json!({"type": "m.login.password",
                            "identifier": {"type": "m.id.user", "user": user},
                            "password": password, "device_id": DEVICE_ID,
                            "initial_device_display_name": "LurkBot"});
                        let answer = self
                            .request(
                                reqwest::Method::POST,
                                "/_matrix/client/v3/login",
                                None,
                                Some(body),
                            )
                            .await?;
                        answer["access_token"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string()
                    }
                };
                let me = self
                    .request(
                        reqwest::Method::GET,
                        "/_matrix/client/v3/account/whoami",
                        Some(&token),
                        None,
                    )
                    .await?;
                let user = me["user_id"].as_str().unwrap_or_default().to_string();
                Ok((token, user))
            })
            .await
            .cloned()
    }

    fn save_since(&self, since: &str) {
        if let Some(dir) = self.state.parent()
            && lurkbot_core::create_private_dir(dir).is_ok()
        {
            let bytes = json!({"since": since}).to_string();
            if let Err(e) =
                lurkbot_core::write_atomic_with_mode(&self.state, bytes.as_bytes(), 0o600)
            {
                tracing::warn!(error = %e, "matrix sync position not saved");
            }
        }
    }

    /// Joins the rooms whose invitation the policy accepts.
    async fn invitations(&self, sync: &Value, token: &str) {
        let Some(invites) = sync.pointer("/rooms/invite").and_then(Value::as_object) else {
            return;
        };
        for (room, invite) in invites {
            let events = invite
                .pointer("/invite_state/events")
                .and_then(Value::as_array);
            let member = events
                .into_iter()
                .flatten()
                .find(|e| e["type"] == "m.room.member" && e["content"]["membership"] == "invite");
            let inviter = member
                .and_then(|e| e["sender"].as_str())
                .unwrap_or_default();
            let direct = member.is_some_and(|e| e["content"]["is_direct"] == true);
            if !(self.invites)(inviter, direct) {
                tracing::info!(
                    room = room.as_str(),
                    inviter,
                    "matrix invitation not accepted"
                );
                continue;
            }
            let path = format!("/_matrix/client/v3/rooms/{}/join", encode(room));
            if let Err(e) = self
                .request(reqwest::Method::POST, &path, Some(token), Some(json!({})))
                .await
            {
                tracing::warn!(room = room.as_str(), error = %e, "matrix room not joined");
            }
        }
    }

    /// How many members `room` has now (asked once, and again after a membership change).
    async fn member_count(&self, token: &str, room: &str) -> u64 {
        if let Some(n) = self.members.lock().ok().and_then(|m| m.get(room).copied()) {
            return n;
        }
        let path = format!("/_matrix/client/v3/rooms/{}/joined_members", encode(room));
        let n = match self
            .request(reqwest::Method::GET, &path, Some(token), None)
            .await
        {
            Ok(answer) => answer["joined"].as_object().map_or(2, |j| j.len() as u64),
            // Unknown: treated as a group, the stricter case (answered only when mentioned).
            Err(_) => 3,
        };
        if let Ok(mut members) = self.members.lock() {
            members.insert(room.to_string(), n);
        }
        n
    }

    /// The messages in a sync answer.
    async fn messages(&self, sync: &Value, token: &str, me: &str) -> Vec<Inbound> {
        let mut out = Vec::new();
        let Some(rooms) = sync.pointer("/rooms/join").and_then(Value::as_object) else {
            return out;
        };
        let localpart = me
            .trim_start_matches('@')
            .split(':')
            .next()
            .unwrap_or_default();
        for (room, joined) in rooms {
            let events: Vec<&Value> = ["/state/events", "/timeline/events"]
                .iter()
                .filter_map(|at| joined.pointer(at).and_then(Value::as_array))
                .flatten()
                .collect();
            if events.iter().any(|e| e["type"] == "m.room.member")
                && let Ok(mut members) = self.members.lock()
            {
                members.remove(room);
            }
            let timeline = joined.pointer("/timeline/events").and_then(Value::as_array);
            for event in timeline.into_iter().flatten() {
                let sender = event["sender"].as_str().unwrap_or_default();
                if sender == me {
                    continue;
                }
                if event["type"] == "m.room.encrypted" {
                    tracing::info!(
                        room = room.as_str(),
                        "an encrypted matrix message was skipped: end-to-end encrypted rooms are not supported yet"
                    );
                    continue;
                }
                if event["type"] != "m.room.message" {
                    continue;
                }
                let content = &event["content"];
                let mut text = content["body"].as_str().unwrap_or_default().to_string();
                let kind = content["msgtype"].as_str().unwrap_or("m.text");
                let mut media = Vec::new();
                if !matches!(kind, "m.text" | "m.notice" | "m.emote") {
                    let mxc = content["url"]
                        .as_str()
                        .and_then(|u| u.strip_prefix("mxc://"))
                        .and_then(|u| u.split_once('/'));
                    if let Some((server, id)) = mxc {
                        media.push(crate::Media {
                            name: text.clone(),
                            source: crate::MediaSource::Url {
                                url: format!(
                                    "{}/_matrix/client/v1/media/download/{}/{}",
                                    self.base,
                                    encode(server),
                                    encode(id)
                                ),
                                bearer: Some(token.to_string()),
                            },
                            // A voice message is `m.audio` marked by MSC3245.
                            voice: kind == "m.audio"
                                && content.get("org.matrix.msc3245.voice").is_some(),
                        });
                    }
                    text = format!("[attachment: {kind} {text}] (not opened)");
                }
                let mentioned = content
                    .pointer("/m.mentions/user_ids")
                    .and_then(Value::as_array)
                    .is_some_and(|ids| ids.iter().any(|i| i == me))
                    || text.contains(me)
                    || (!localpart.is_empty()
                        && text.to_lowercase().contains(&localpart.to_lowercase()));
                let group = self.member_count(token, room).await > 2;
                out.push(Inbound {
                    channel: "matrix",
                    chat: room.clone(),
                    sender: sender.to_string(),
                    sender_name: sender.to_string(),
                    handle: None,
                    forwarded_from: None,
                    authenticated: true,
                    text,
                    group,
                    mentioned,
                    message_id: event["event_id"].as_str().unwrap_or_default().to_string(),
                    thread: content
                        .pointer("/m.relates_to/rel_type")
                        .filter(|r| *r == "m.thread")
                        .and_then(|_| content.pointer("/m.relates_to/event_id"))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    platform_id: None,
                    media,
                });
            }
        }
        out
    }
}

/// A path segment, percent-encoded (room ids hold `!` and `:`).
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Channel for Matrix {
    fn name(&self) -> &'static str {
        "matrix"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        // Clients render the body as text; Markdown reads well as it is.
        markdown.to_string()
    }

    fn acknowledge(&self) {
        if let Some(since) = self.since.lock().ok().and_then(|s| s.clone()) {
            self.save_since(&since);
        }
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let (token, me) = self.session().await?;
            let since = self.since.lock().ok().and_then(|s| s.clone());
            let path = match &since {
                Some(since) => format!(
                    "/_matrix/client/v3/sync?timeout={}&since={}",
                    self.poll.0.as_millis(),
                    encode(since)
                ),
                // The first start: only the position, not the history.
                None => "/_matrix/client/v3/sync?timeout=0".to_string(),
            };
            let sync = self.sync(&path, &token).await?;
            let next = sync["next_batch"].as_str().unwrap_or_default().to_string();
            if !next.is_empty()
                && let Ok(mut s) = self.since.lock()
            {
                *s = Some(next.clone());
            }
            self.invitations(&sync, &token).await;
            if since.is_none() {
                // The first start answers nothing old.
                return Ok(Vec::new());
            }
            Ok(self.messages(&sync, &token, &me).await)
        })
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let (token, _) = self.session().await?;
            let body = json!({"msgtype": "m.text", "body": text});
            self.room_message(&token, chat, body, reply_to).await
        })
    }

    /// The outbox's key is the transaction id: a send retried after a crash is one event.
    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            let (token, _) = self.session().await?;
            let body = json!({"msgtype": "m.text", "body": text});
            self.room_message_as(&token, chat, body, reply_to, &format!("lurkbot.{key}"))
                .await
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: VoiceNote<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let (token, _) = self.session().await?;
            let url = self
                .upload(&token, "voice.ogg", "audio/ogg", note.ogg.to_vec())
                .await?;
            let millis = (note.seconds * 1000.0).round() as u64;
            // `m.audio` marked as a voice message (MSC3245, with MSC1767's audio block), which
            // Element shows as a voice message with a player.
            let body = json!({
                "msgtype": "m.audio",
                "body": "Voice message",
                "url": url,
                "info": {"mimetype": "audio/ogg", "size": note.ogg.len(), "duration": millis},
                "org.matrix.msc1767.audio": {"duration": millis},
                "org.matrix.msc3245.voice": {},
            });
            self.room_message(&token, chat, body, reply_to).await
        })
    }

    fn stale(&self) -> Option<String> {
        self.stale.get()
    }

    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Ok((token, me)) = self.session().await else {
                return;
            };
            let path = format!(
                "/_matrix/client/v3/rooms/{}/typing/{}",
                encode(chat),
                encode(&me)
            );
            let body = json!({"typing": true, "timeout": 30_000});
            let _ = self
                .request(reqwest::Method::PUT, &path, Some(&token), Some(body))
                .await;
        })
    }
}

#[cfg(test)]
mod liveness_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_ids_are_encoded_for_paths() {
        assert_eq!(encode("!abc:example.org"), "%21abc%3Aexample.org");
    }
}
