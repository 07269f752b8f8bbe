//! Slack (`[channels.slack]`; `SLACK_BOT_TOKEN`, the `xoxb-` token, and `SLACK_APP_TOKEN`, the
//! `xapp-` token with `connections:write`, in the home's `.env`): Socket Mode for events —
//! `apps.connections.open` gives a WebSocket URL, every envelope is acknowledged with its
//! `envelope_id` — one carrying a message only once the gateway recorded it
//! ([`Channel::acknowledge`]; an unacknowledged one is sent again by Slack, and its `ts`, the
//! source id, keeps it from being answered twice) — a `disconnect` asks for a fresh connection — and the Web API's `chat.postMessage` for replies, in mrkdwn, in the
//! thread of the message answered (threads are topics); voice notes through the external file
//! upload (`files.getUploadURLExternal`, the bytes, `files.completeUploadExternal`). Channel messages are answered when the
//! bot is mentioned; direct messages (`im`) follow `dm_policy`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use crate::http::{classify, client, network};
use crate::ws::{Handed, Liveness, Socket, SocketInbox, open};
use crate::{BoxFuture, Channel, ChannelError, Inbound, VoiceNote};

/// The public Web API.
pub const DEFAULT_BASE_URL: &str = "https://slack.com";
/// The longest message sent at once (Slack truncates past 40,000; 4,000 reads well).
pub const MAX_CHARS: usize = 4000;
/// How often the socket is pinged.
const PING_EVERY: Duration = Duration::from_secs(15);
/// How long the socket may say nothing (not even a pong) before it is taken for dead.
const SILENCE: Duration = Duration::from_secs(45);

/// A Slack app in Socket Mode.
pub struct Slack {
    http: reqwest::Client,
    api: String,
    bot_token: String,
    app_token: String,
    inbox: SocketInbox,
    me: Arc<Mutex<String>>,
    acks: Arc<Acks>,
    liveness: Liveness,
}

/// The envelopes of messages, acknowledged to Slack only once the gateway recorded them.
struct Acks {
    /// Envelope ids of the messages handed to the inbox, by the message's source id (a
    /// message and its `app_mention` arrive in two envelopes).
    forwarded: Mutex<HashMap<String, Vec<String>>>,
    /// Those of the last batch [`Channel::receive`] returned: acknowledged by
    /// [`Channel::acknowledge`]; a batch never acknowledged (not recorded) is dropped at the
    /// next receive, and Slack sends it again.
    handed: Mutex<Vec<String>>,
    /// To the socket task: envelope ids to acknowledge.
    tx: mpsc::UnboundedSender<String>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
}

impl Default for Acks {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            forwarded: Mutex::default(),
            handed: Mutex::default(),
            tx,
            rx: tokio::sync::Mutex::new(rx),
        }
    }
}

impl Slack {
    /// An app with its bot and app-level tokens on `base_url` (default [`DEFAULT_BASE_URL`]).
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(
        base_url: Option<&str>,
        bot_token: &str,
        app_token: &str,
    ) -> Result<Self, ChannelError> {
        let base = base_url.unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/');
        Ok(Self {
            http: client(Duration::from_secs(30))?,
            api: format!("{base}/api"),
            bot_token: bot_token.into(),
            app_token: app_token.into(),
            inbox: SocketInbox::default(),
            me: Arc::new(Mutex::new(String::new())),
            acks: Arc::default(),
            liveness: Liveness::new(PING_EVERY, SILENCE),
        })
    }

    /// Pings every `ping_every` and takes `silence` for a dead socket (tests shorten them).
    #[must_use]
    pub fn with_liveness(mut self, ping_every: Duration, silence: Duration) -> Self {
        self.liveness = Liveness::new(ping_every, silence);
        self
    }
}

/// Calls a Web API method with `token`; Slack answers 200 with `ok: false` for most refusals.
async fn call(
    http: &reqwest::Client,
    api: &str,
    token: &str,
    method: &str,
    body: Value,
) -> Result<Value, ChannelError> {
    let response = http
        .post(format!("{api}/{method}"))
        .bearer_auth(token)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/json; charset=utf-8",
        )
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| network("slack", e))?;
    answer(method, response).await
}

/// A Web API answer: its JSON when `ok`, else its error classified.
async fn answer(method: &str, response: reqwest::Response) -> Result<Value, ChannelError> {
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let bytes = response.bytes().await.map_err(|e| network("slack", e))?;
    let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if status == 200 && answer["ok"] == true {
        return Ok(answer);
    }
    let error = answer["error"].as_str().unwrap_or("unknown_error");
    let text = format!("{method}: {error}");
    Err(match (status, error) {
        (429, _) | (_, "ratelimited") => classify(429, &text, retry),
        (500..=599, _)
        | (_, "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout") => {
            ChannelError::Transient(text)
        }
        _ => ChannelError::Permanent(text),
    })
}

/// One Events API event as an [`Inbound`], unless it is a bot's or an edit. A message with
/// files (a voice clip among them) has the subtype `file_share`; every other subtype (edits,
/// joins, deletions) is not something someone said.
fn inbound(event: &Value, me: &str) -> Option<Inbound> {
    let kind = event["type"].as_str()?;
    if !matches!(kind, "message" | "app_mention")
        || event
            .get("subtype")
            .is_some_and(|s| s.as_str() != Some("file_share"))
        || event.get("bot_id").is_some()
    {
        return None;
    }
    let user = event["user"].as_str()?;
    if user == me {
        return None;
    }
    let mention = format!("<@{me}>");
    let raw = event["text"].as_str().unwrap_or_default();
    let mut text = raw.replace(&mention, "").trim().to_string();
    for file in event["files"].as_array().into_iter().flatten() {
        let name = file["name"].as_str().unwrap_or_default();
        text.push_str(&format!("\n[attachment: {name}] (not opened)"));
    }
    let direct = event["channel_type"] == "im";
    Some(Inbound {
        channel: "slack",
        chat: event["channel"].as_str()?.to_string(),
        sender: user.to_string(),
        sender_name: user.to_string(),
        handle: None,
        forwarded_from: None,
        authenticated: true,
        text: text.trim().to_string(),
        group: !direct,
        mentioned: kind == "app_mention" || (!me.is_empty() && raw.contains(&mention)),
        // Replies go in the thread of a channel message (its root); direct messages unthreaded.
        message_id: if direct {
            String::new()
        } else {
            event["thread_ts"]
                .as_str()
                .or(event["ts"].as_str())
                .unwrap_or_default()
                .to_string()
        },
        thread: event["thread_ts"].as_str().map(str::to_string),
        // Its own id (a message and its `app_mention` share it: answered once).
        platform_id: event["ts"].as_str().map(str::to_string),
        media: event["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| {
                Some(crate::Media {
                    name: f["name"].as_str().unwrap_or("file").to_string(),
                    source: crate::MediaSource::Url {
                        url: f["url_private"].as_str()?.to_string(),
                        bearer: None,
                    },
                    // Slack's recorded clips are files of subtype `slack_audio`.
                    voice: f["subtype"] == "slack_audio",
                })
            })
            .collect(),
    })
}

/// What the socket task takes with it: the Web API and its tokens.
struct Tokens {
    http: reqwest::Client,
    api: String,
    bot: String,
    app: String,
}

/// Keeps a Socket Mode connection open (reconnecting with back-off) and hands the messages on.
async fn run_socket(
    tokens: Tokens,
    me: Arc<Mutex<String>>,
    out: mpsc::Sender<Handed>,
    acks: Arc<Acks>,
    liveness: Liveness,
) {
    let mut backoff = Duration::from_secs(1);
    loop {
        let slack = Peer {
            http: &tokens.http,
            api: &tokens.api,
            bot: &tokens.bot,
            app: &tokens.app,
        };
        match connection(&slack, &me, &out, &acks, &liveness).await {
            Err(ChannelError::Permanent(e)) => {
                let _ = out.send(Err(ChannelError::Permanent(e))).await;
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "slack socket ended; reconnecting");
                liveness.dead(e.to_string());
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

/// The Web API and the tokens a connection opens with.
struct Peer<'a> {
    http: &'a reqwest::Client,
    api: &'a str,
    bot: &'a str,
    app: &'a str,
}

async fn send_ack(socket: &mut Socket, envelope: &str) -> Result<(), ChannelError> {
    let ack = json!({"envelope_id": envelope}).to_string();
    socket
        .send(Message::Text(ack.into()))
        .await
        .map_err(|e| ChannelError::Transient(format!("slack socket: {e}")))
}

/// One socket: `Ok` when Slack asked for a fresh connection.
async fn connection(
    slack: &Peer<'_>,
    me: &Arc<Mutex<String>>,
    out: &mpsc::Sender<Handed>,
    acks: &Acks,
    liveness: &Liveness,
) -> Result<(), ChannelError> {
    let (http, api, bot) = (slack.http, slack.api, slack.bot);
    if me.lock().map(|m| m.is_empty()).unwrap_or(true) {
        let auth = call(http, api, bot, "auth.test", json!({})).await?;
        if let Ok(mut m) = me.lock() {
            *m = auth["user_id"].as_str().unwrap_or_default().to_string();
        }
    }
    let opened = call(http, api, slack.app, "apps.connections.open", json!({})).await?;
    let url = opened["url"].as_str().unwrap_or_default().to_string();
    let mut socket: Socket = open(&url, "slack").await?;
    let mut to_ack = acks.rx.lock().await;
    while to_ack.try_recv().is_ok() {}
    let mut ping = tokio::time::interval_at(
        tokio::time::Instant::now() + liveness.ping_every,
        liveness.ping_every,
    );
    let mut heard = tokio::time::Instant::now();
    loop {
        let next = tokio::select! {
            frame = socket.next() => frame,
            Some(envelope) = to_ack.recv() => {
                send_ack(&mut socket, &envelope).await?;
                continue;
            }
            _ = ping.tick() => {
                if heard.elapsed() >= liveness.silence {
                    return Err(ChannelError::Transient(format!(
                        "slack socket said nothing for {} s, not even a pong: reconnecting",
                        liveness.silence.as_secs()
                    )));
                }
                let _ = socket.send(Message::Ping(Vec::new().into())).await;
                continue;
            }
        };
        heard = tokio::time::Instant::now();
        liveness.alive();
        let frame = match next {
            Some(Ok(Message::Text(text))) => {
                serde_json::from_str::<Value>(text.as_str()).unwrap_or(Value::Null)
            }
            Some(Ok(Message::Ping(p))) => {
                let _ = socket.send(Message::Pong(p)).await;
                continue;
            }
            Some(Ok(Message::Close(_))) | None => {
                return Err(ChannelError::Transient("slack socket closed".into()));
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(ChannelError::Transient(format!("slack socket: {e}"))),
        };
        let envelope = frame["envelope_id"].as_str();
        let message = match frame["type"].as_str() {
            Some("disconnect") => return Ok(()),
            Some("events_api") => {
                let id = me.lock().map(|m| m.clone()).unwrap_or_default();
                inbound(&frame["payload"]["event"], &id)
            }
            _ => None,
        };
        let Some(mut message) = message else {
            // Nothing to record: acknowledged at once.
            if let Some(envelope) = envelope {
                send_ack(&mut socket, envelope).await?;
            }
            continue;
        };
        // Slack's private file URLs need the bot token.
        for media in &mut message.media {
            if let crate::MediaSource::Url { bearer, .. } = &mut media.source {
                *bearer = Some(bot.to_string());
            }
        }
        match (envelope, message.source_id()) {
            (Some(envelope), Some(source)) => {
                if let Ok(mut forwarded) = acks.forwarded.lock() {
                    forwarded
                        .entry(source)
                        .or_default()
                        .push(envelope.to_string());
                }
            }
            // Without an id nothing could keep it from being answered twice: acknowledged now.
            (Some(envelope), None) => send_ack(&mut socket, envelope).await?,
            (None, _) => {}
        }
        if out.send(Ok(message)).await.is_err() {
            return Ok(());
        }
    }
}

/// Markdown as Slack's mrkdwn: `&`, `<`, `>` escaped, `**bold**` as `*bold*`, code kept.
pub fn mrkdwn(markdown: &str) -> String {
    markdown
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace("**", "*")
}

impl Channel for Slack {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        mrkdwn(markdown)
    }

    fn stale(&self) -> Option<String> {
        self.liveness.stale()
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let batch = self
                .inbox
                .next("slack socket", |tx| {
                    let tokens = Tokens {
                        http: self.http.clone(),
                        api: self.api.clone(),
                        bot: self.bot_token.clone(),
                        app: self.app_token.clone(),
                    };
                    tokio::spawn(run_socket(
                        tokens,
                        self.me.clone(),
                        tx,
                        self.acks.clone(),
                        self.liveness.clone(),
                    ));
                })
                .await?;
            // The envelopes of this batch, acknowledged once it is recorded.
            let envelopes: Vec<String> = match self.acks.forwarded.lock() {
                Ok(mut forwarded) => batch
                    .iter()
                    .filter_map(Inbound::source_id)
                    .filter_map(|source| forwarded.remove(&source))
                    .flatten()
                    .collect(),
                Err(_) => Vec::new(),
            };
            if let Ok(mut handed) = self.acks.handed.lock() {
                *handed = envelopes;
            }
            Ok(batch)
        })
    }

    fn acknowledge(&self) {
        let handed = match self.acks.handed.lock() {
            Ok(mut handed) => std::mem::take(&mut *handed),
            Err(_) => return,
        };
        for envelope in handed {
            let _ = self.acks.tx.send(envelope);
        }
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let mut body = json!({"channel": chat, "text": text, "mrkdwn": true});
            // Replies go to the thread of the message answered (`reply_to` is its thread or ts).
            if let Some(ts) = reply_to.filter(|r| !r.is_empty()) {
                body["thread_ts"] = json!(ts);
            }
            call(
                &self.http,
                &self.api,
                &self.bot_token,
                "chat.postMessage",
                body,
            )
            .await
            .map(|_| ())
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: VoiceNote<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            // Slack's external upload: ask for an upload URL (arguments as a query: this
            // method takes no JSON), send the bytes there, then share the file in the channel.
            let method = "files.getUploadURLExternal";
            let url = reqwest::Url::parse_with_params(
                &format!("{}/{method}", self.api),
                &[
                    ("filename", "voice.ogg".to_string()),
                    ("length", note.ogg.len().to_string()),
                ],
            )
            .map_err(|e| ChannelError::Permanent(format!("{method}: {e}")))?;
            let response = self
                .http
                .post(url)
                .bearer_auth(&self.bot_token)
                .send()
                .await
                .map_err(|e| network("slack", e))?;
            let asked = answer(method, response).await?;
            let (Some(upload_url), Some(file_id)) =
                (asked["upload_url"].as_str(), asked["file_id"].as_str())
            else {
                return Err(ChannelError::Permanent(format!(
                    "{method}: no upload_url or file_id"
                )));
            };
            let uploaded = self
                .http
                .post(upload_url)
                .header(reqwest::header::CONTENT_TYPE, "audio/ogg")
                .body(note.ogg.to_vec())
                .send()
                .await
                .map_err(|e| network("slack upload", e))?;
            if !uploaded.status().is_success() {
                return Err(classify(
                    uploaded.status().as_u16(),
                    "slack upload refused",
                    None,
                ));
            }
            let mut body = json!({"files": [{"id": file_id, "title": "Voice message"}],
                "channel_id": chat});
            if let Some(ts) = reply_to.filter(|r| !r.is_empty()) {
                body["thread_ts"] = json!(ts);
            }
            call(
                &self.http,
                &self.api,
                &self.bot_token,
                "files.completeUploadExternal",
                body,
            )
            .await
            .map(|_| ())
        })
    }

    fn typing<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, ()> {
        // The Web API has no typing indicator for bots.
        Box::pin(async {})
    }
}

#[cfg(test)]
mod liveness_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_become_inbound_messages_and_mrkdwn_is_escaped() {
        let event = json!({"type": "app_mention", "channel": "C1", "user": "U42", "text": "<@UBOT> hi & bye",
            "ts": "1.2", "thread_ts": "1.0", "channel_type": "channel"});
        let m = inbound(&event, "UBOT").unwrap();
        assert!(m.group && m.mentioned);
        assert_eq!(
            (m.text.as_str(), m.thread.as_deref()),
            ("hi & bye", Some("1.0"))
        );
        let im = json!({"type": "message", "channel": "D1", "user": "U42", "text": "yo", "ts": "2.0", "channel_type": "im"});
        assert!(!inbound(&im, "UBOT").unwrap().group);
        let edited = json!({"type": "message", "subtype": "message_changed", "channel": "D1"});
        assert!(inbound(&edited, "UBOT").is_none());
        // A recorded clip: a `file_share` message whose file is `slack_audio`.
        let clip = json!({"type": "message", "subtype": "file_share", "channel": "D1", "user": "U42",
            "text": "", "ts": "3.0", "channel_type": "im",
            "files": [{"name": "audio_message.webm", "subtype": "slack_audio", "url_private": "https://files.slack.com/x"}]});
        let heard = inbound(&clip, "UBOT").unwrap();
        assert!(heard.media[0].voice, "{heard:?}");
        assert_eq!(heard.text, "[attachment: audio_message.webm] (not opened)");
        assert_eq!(mrkdwn("**a** <b> & c"), "*a* &lt;b&gt; &amp; c");
    }
}
