//! Discord (`[channels.discord]`, `DISCORD_BOT_TOKEN` in the home's `.env`): the Gateway
//! WebSocket for messages — Hello, Identify (guild and direct messages with the message
//! content intent), heartbeats with their acknowledgements (a missed one reconnects), Resume
//! after a drop so nothing is lost or repeated, a fresh Identify after an invalid session —
//! and the REST API for sending (2,000 characters a message, the first replying to the message
//! answered, mentions never pinging anyone), voice notes as an audio upload, and typing. Guild messages are answered when the
//! bot is mentioned or replied to; direct messages follow `dm_policy`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use lurkbot_core::multipart::Form;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use crate::http::{classify, client, network};
use crate::ws::{Handed, Liveness, Socket, SocketInbox, open};
use crate::{BoxFuture, Channel, ChannelError, Inbound, VoiceNote};

/// The public API.
pub const DEFAULT_BASE_URL: &str = "https://discord.com";
/// The longest message Discord takes.
pub const MAX_CHARS: usize = 2000;
/// GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT.
pub const INTENTS: u64 = (1 << 9) | (1 << 12) | (1 << 15);

/// Where a dropped session resumes.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
struct Resume {
    session_id: String,
    url: String,
    seq: Option<u64>,
}

impl Resume {
    fn to_json(&self) -> Value {
        json!({"sessionId": self.session_id, "url": self.url, "seq": self.seq})
    }

    fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            session_id: v["sessionId"]
                .as_str()
                .filter(|s| !s.is_empty())?
                .to_string(),
            url: v["url"].as_str().unwrap_or_default().to_string(),
            seq: Some(v["seq"].as_u64()?),
        })
    }
}

/// Where the session stands for a restart: the session and sequence number of each message
/// handed over (in order), and the last one the gateway recorded, written to
/// `channels/discord/state.json` by [`Channel::acknowledge`]. A restart resumes that session,
/// and Discord replays what came after (the gateway's records keep a replayed message from
/// being answered twice).
#[derive(Default)]
struct Resumable {
    handed: Mutex<std::collections::VecDeque<Resume>>,
    recorded: Mutex<Option<Resume>>,
    state: Option<std::path::PathBuf>,
}

/// A Discord bot.
pub struct Discord {
    http: reqwest::Client,
    api: String,
    token: String,
    inbox: SocketInbox,
    /// The bot's own user id (from READY).
    me: Arc<Mutex<String>>,
    resumable: Arc<Resumable>,
    /// Its heartbeat is its ping; `silence` bounds the wait for the gateway's hello.
    liveness: Liveness,
}

impl Discord {
    /// A bot with `token` on `base_url` (default [`DEFAULT_BASE_URL`]).
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(base_url: Option<&str>, token: &str) -> Result<Self, ChannelError> {
        let base = base_url.unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/');
        Ok(Self {
            http: client(Duration::from_secs(30))?,
            api: format!("{base}/api/v10"),
            token: token.to_string(),
            inbox: SocketInbox::default(),
            me: Arc::new(Mutex::new(String::new())),
            resumable: Arc::default(),
            liveness: Liveness::new(Duration::from_secs(30), Duration::from_secs(30)),
        })
    }

    /// Waits at most `silence` for the gateway's hello (tests shorten it).
    #[must_use]
    pub fn with_liveness(mut self, silence: Duration) -> Self {
        self.liveness = Liveness::new(silence, silence);
        self
    }

    /// The same bot keeping where its session stands in `dir` (`state.json`), so a restart
    /// resumes the session and receives what was sent meanwhile.
    #[must_use]
    pub fn resuming_from(mut self, dir: std::path::PathBuf) -> Self {
        let state = dir.join("state.json");
        let saved = std::fs::read(&state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| Resume::from_json(&v));
        self.resumable = Arc::new(Resumable {
            recorded: Mutex::new(saved),
            state: Some(state),
            ..Resumable::default()
        });
        self
    }

    async fn rest(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ChannelError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.api))
            .header(
                reqwest::header::AUTHORIZATION,
                format!("Bot {}", self.token),
            );
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        Self::answer(request).await
    }

    /// Posts a message with files (`payload_json` and `files[n]` parts).
    async fn upload(&self, path: &str, form: Form) -> Result<Value, ChannelError> {
        let (kind, body) = form.finish();
        let request = self
            .http
            .post(format!("{}{path}", self.api))
            .header(
                reqwest::header::AUTHORIZATION,
                format!("Bot {}", self.token),
            )
            .header(reqwest::header::CONTENT_TYPE, kind)
            .body(body);
        Self::answer(request).await
    }

    /// Sends `request`; the JSON answer, or its error classified.
    async fn answer(request: reqwest::RequestBuilder) -> Result<Value, ChannelError> {
        let response = request.send().await.map_err(|e| network("discord", e))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|e| network("discord", e))?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return Ok(answer);
        }
        let description = format!(
            "{} {}",
            answer["code"]
                .as_u64()
                .map(|c| c.to_string())
                .unwrap_or_default(),
            answer["message"].as_str().unwrap_or_default()
        );
        let retry = answer["retry_after"]
            .as_f64()
            .map(|s| s.ceil().max(1.0) as u64);
        Err(classify(status, description.trim(), retry))
    }
}

/// One message event as an [`Inbound`], unless it is the bot's own or another bot's.
fn inbound(d: &Value, me: &str) -> Option<Inbound> {
    let author = d.get("author")?;
    if author["bot"] == true || author["id"] == me {
        return None;
    }
    let mut text = d["content"].as_str().unwrap_or_default().to_string();
    for file in d["attachments"].as_array().into_iter().flatten() {
        let name = file["filename"].as_str().unwrap_or_default();
        text.push_str(&format!("\n[attachment: {name}] (not opened)"));
    }
    let mentioned = d["mentions"]
        .as_array()
        .is_some_and(|m| m.iter().any(|u| u["id"] == me))
        || d.pointer("/referenced_message/author/id")
            .and_then(Value::as_str)
            == Some(me);
    // The mention itself is not part of what was said.
    let text = text.replace(&format!("<@{me}>"), "").trim().to_string();
    Some(Inbound {
        channel: "discord",
        chat: d["channel_id"].as_str()?.to_string(),
        sender: author["id"].as_str()?.to_string(),
        sender_name: author["username"].as_str().unwrap_or_default().to_string(),
        handle: None,
        forwarded_from: None,
        authenticated: true,
        text,
        group: d.get("guild_id").is_some_and(|g| !g.is_null()),
        mentioned,
        message_id: d["id"].as_str().unwrap_or_default().to_string(),
        thread: None,
        platform_id: None,
        media: d["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| {
                Some(crate::Media {
                    name: a["filename"].as_str().unwrap_or("attachment").to_string(),
                    source: crate::MediaSource::Url {
                        url: a["url"].as_str()?.to_string(),
                        bearer: None,
                    },
                    // A voice message's attachment carries its length and waveform.
                    voice: a.get("duration_secs").is_some(),
                })
            })
            .collect(),
    })
}

/// Runs gateway sessions until the receiver is gone: reconnects (resuming when it can) after
/// drops; stops on a permanent refusal (a bad token), reported to the receiver.
async fn run_gateway(
    api_base: String,
    http: reqwest::Client,
    token: String,
    me: Arc<Mutex<String>>,
    out: mpsc::Sender<Handed>,
    resumable: Arc<Resumable>,
    liveness: Liveness,
) {
    let mut resume: Option<Resume> = resumable.recorded.lock().ok().and_then(|r| r.clone());
    if resume.is_some() {
        tracing::info!("discord: resuming the session of the last start");
    }
    let mut backoff = Duration::from_secs(1);
    loop {
        let result = session(
            &api_base,
            &http,
            &token,
            (&me, &resumable),
            &out,
            &mut resume,
            &liveness,
        )
        .await;
        match result {
            Err(ChannelError::Permanent(e)) => {
                let _ = out.send(Err(ChannelError::Permanent(e))).await;
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "discord gateway session ended; reconnecting");
                liveness.dead(e.to_string());
                if out.is_closed() {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
            Ok(()) => backoff = Duration::from_secs(1),
        }
        if out.is_closed() {
            return;
        }
    }
}

/// One gateway session: `Ok` when the server asked to reconnect.
async fn session(
    api: &str,
    http: &reqwest::Client,
    token: &str,
    (me, resumable): (&Arc<Mutex<String>>, &Arc<Resumable>),
    out: &mpsc::Sender<Handed>,
    resume: &mut Option<Resume>,
    liveness: &Liveness,
) -> Result<(), ChannelError> {
    let url = match resume.as_ref().filter(|r| !r.url.is_empty()) {
        Some(r) => r.url.clone(),
        None => {
            let answer = http
                .get(format!("{api}/gateway/bot"))
                .header(reqwest::header::AUTHORIZATION, format!("Bot {token}"))
                .send()
                .await
                .map_err(|e| network("discord", e))?;
            let status = answer.status().as_u16();
            let body: Value =
                serde_json::from_slice(&answer.bytes().await.map_err(|e| network("discord", e))?)
                    .unwrap_or(Value::Null);
            if status != 200 {
                return Err(classify(
                    status,
                    body["message"].as_str().unwrap_or("gateway/bot"),
                    None,
                ));
            }
            body["url"].as_str().unwrap_or_default().to_string()
        }
    };
    let mut socket = open(
        &format!("{}/?v=10&encoding=json", url.trim_end_matches('/')),
        "discord gateway",
    )
    .await?;
    // A socket that opens and says nothing (half-open) is not waited on for ever.
    let hello = tokio::time::timeout(liveness.silence, next_json(&mut socket))
        .await
        .map_err(|_| ChannelError::Transient("discord gateway: no hello in time".into()))??;
    liveness.alive();
    let interval =
        Duration::from_millis(hello["d"]["heartbeat_interval"].as_u64().unwrap_or(41_250));
    let seq = resume.as_ref().and_then(|r| r.seq);
    let start = match resume.as_ref() {
        Some(r) => {
            json!({"op": 6, "d": {"token": token, "session_id": r.session_id, "seq": r.seq}})
        }
        None => json!({"op": 2, "d": {"token": token, "intents": INTENTS,
            "properties": {"os": std::env::consts::OS, "browser": "lurkbot", "device": "lurkbot"}}}),
    };
    send_json(&mut socket, &start).await?;
    let mut last_seq = seq;
    let mut acked = true;
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    loop {
        tokio::select! {
            _ = beat.tick() => {
                if !acked {
                    return Err(ChannelError::Transient("discord gateway: a heartbeat was not acknowledged".into()));
                }
                acked = false;
                send_json(&mut socket, &json!({"op": 1, "d": last_seq})).await?;
            }
            frame = next_json(&mut socket) => {
                let frame = frame?;
                liveness.alive();
                if let Some(s) = frame["s"].as_u64() {
                    last_seq = Some(s);
                    if let Some(r) = resume.as_mut() {
                        r.seq = Some(s);
                    }
                }
                match frame["op"].as_u64() {
                    Some(0) => match frame["t"].as_str() {
                        Some("READY") => {
                            let d = &frame["d"];
                            if let Ok(mut m) = me.lock() {
                                *m = d.pointer("/user/id").and_then(Value::as_str).unwrap_or_default().to_string();
                            }
                            *resume = Some(Resume {
                                session_id: d["session_id"].as_str().unwrap_or_default().to_string(),
                                url: d["resume_gateway_url"].as_str().unwrap_or_default().to_string(),
                                seq: last_seq,
                            });
                        }
                        Some("MESSAGE_CREATE") => {
                            let id = me.lock().map(|m| m.clone()).unwrap_or_default();
                            if let Some(message) = inbound(&frame["d"], &id) {
                                if let (Some(at), Ok(mut handed)) = (resume.clone(), resumable.handed.lock()) {
                                    handed.push_back(at);
                                }
                                if out.send(Ok(message)).await.is_err() {
                                    return Ok(());
                                }
                            }
                        }
                        _ => {}
                    },
                    Some(1) => send_json(&mut socket, &json!({"op": 1, "d": last_seq})).await?,
                    Some(7) => return Ok(()),
                    Some(9) => {
                        if frame["d"] != true {
                            *resume = None;
                        }
                        return Err(ChannelError::Transient("discord gateway: invalid session".into()));
                    }
                    Some(11) => acked = true,
                    _ => {}
                }
            }
        }
    }
}

async fn send_json(socket: &mut Socket, value: &Value) -> Result<(), ChannelError> {
    socket
        .send(Message::Text(value.to_string().into()))
        .await
        .map_err(|e| ChannelError::Transient(format!("discord gateway: {e}")))
}

/// The next JSON frame; a close with Discord's authentication code is permanent.
async fn next_json(socket: &mut Socket) -> Result<Value, ChannelError> {
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) => {
                return serde_json::from_str(text.as_str())
                    .map_err(|e| ChannelError::Transient(format!("discord gateway: {e}")));
            }
            Some(Ok(Message::Close(frame))) => {
                let (code, reason) = frame
                    .map(|f| (u16::from(f.code), f.reason.to_string()))
                    .unwrap_or((1000, String::new()));
                let text = format!("discord gateway closed {code} {reason}");
                // 4004 authentication failed, 4013/4014 invalid or disallowed intents.
                return Err(if matches!(code, 4004 | 4010 | 4011 | 4012 | 4013 | 4014) {
                    ChannelError::Permanent(text)
                } else {
                    ChannelError::Transient(text)
                });
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(ChannelError::Transient(format!("discord gateway: {e}"))),
            None => {
                return Err(ChannelError::Transient(
                    "discord gateway: the connection ended".into(),
                ));
            }
        }
    }
}

impl Channel for Discord {
    fn name(&self) -> &'static str {
        "discord"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        markdown.to_string()
    }

    fn stale(&self) -> Option<String> {
        self.liveness.stale()
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let batch = self
                .inbox
                .next("discord gateway", |tx| {
                    tokio::spawn(run_gateway(
                        self.api.clone(),
                        self.http.clone(),
                        self.token.clone(),
                        self.me.clone(),
                        tx,
                        self.resumable.clone(),
                        self.liveness.clone(),
                    ));
                })
                .await?;
            // Where the last message of this batch stands: written once it is recorded.
            if let Ok(mut handed) = self.resumable.handed.lock() {
                let last = (0..batch.len()).filter_map(|_| handed.pop_front()).last();
                if let (Some(last), Ok(mut recorded)) = (last, self.resumable.recorded.lock()) {
                    *recorded = Some(last);
                }
            }
            Ok(batch)
        })
    }

    fn acknowledge(&self) {
        let Some(state) = &self.resumable.state else {
            return;
        };
        let Some(recorded) = self.resumable.recorded.lock().ok().and_then(|r| r.clone()) else {
            return;
        };
        if let Some(dir) = state.parent()
            && let Err(e) = lurkbot_core::create_private_dir(dir)
        {
            tracing::warn!(error = %e, "discord session not saved");
            return;
        }
        let bytes = recorded.to_json().to_string();
        if let Err(e) = lurkbot_core::write_atomic_with_mode(state, bytes.as_bytes(), 0o600) {
            tracing::warn!(error = %e, "discord session not saved");
        }
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let mut body = json!({"content": text, "allowed_mentions": {"parse": []}});
            if let Some(id) = reply_to.filter(|r| !r.is_empty()) {
                body["message_reference"] = json!({"message_id": id, "fail_if_not_exists": false});
            }
            self.rest(
                reqwest::Method::POST,
                &format!("/channels/{chat}/messages"),
                Some(body),
            )
            .await
            .map(|_| ())
        })
    }

    /// The outbox's key is the `nonce`, enforced: Discord posts one message per nonce for a
    /// few minutes, however often the same request is made. The message's id.
    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            // A nonce is at most 25 characters.
            let nonce: String = key
                .chars()
                .rev()
                .take(25)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let mut body = json!({"content": text, "allowed_mentions": {"parse": []},
                "nonce": nonce, "enforce_nonce": true});
            if let Some(id) = reply_to.filter(|r| !r.is_empty()) {
                body["message_reference"] = json!({"message_id": id, "fail_if_not_exists": false});
            }
            let sent = self
                .rest(
                    reqwest::Method::POST,
                    &format!("/channels/{chat}/messages"),
                    Some(body),
                )
                .await?;
            Ok(sent["id"].as_str().map(str::to_string))
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: VoiceNote<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            // An audio upload, which Discord's clients play inline.
            let mut payload = json!({"attachments": [{"id": 0, "filename": "voice.ogg"}],
                "allowed_mentions": {"parse": []}});
            if let Some(id) = reply_to.filter(|r| !r.is_empty()) {
                payload["message_reference"] =
                    json!({"message_id": id, "fail_if_not_exists": false});
            }
            let form = Form::new().text("payload_json", &payload.to_string()).file(
                "files[0]",
                "voice.ogg",
                "audio/ogg",
                note.ogg.to_vec(),
            );
            self.upload(&format!("/channels/{chat}/messages"), form)
                .await
                .map(|_| ())
        })
    }

    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self
                .rest(
                    reqwest::Method::POST,
                    &format!("/channels/{chat}/typing"),
                    None,
                )
                .await;
        })
    }
}

#[cfg(test)]
mod liveness_tests;

#[cfg(test)]
mod tests;
