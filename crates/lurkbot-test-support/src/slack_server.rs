//! A Slack server on loopback, written from Slack's API documentation, for the channel tests
//! (Slack has no local server): the Web API (`auth.test`, `apps.connections.open` with the
//! app-level token, `chat.postMessage` with the bot token; HTTP 200 with `ok: false` and an
//! `error` for refusals, 429 with `Retry-After` when rate-limited) and Socket Mode (`hello`,
//! `events_api` envelopes that must be acknowledged with their `envelope_id` — an
//! unacknowledged one is delivered again on the next connection — and `disconnect`). It
//! refuses what Slack refuses: a wrong token (`invalid_auth`), an unknown channel
//! (`channel_not_found`), an empty text (`no_text`), a text over 40,000 characters
//! (`msg_too_long`).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::Message;

/// The bot's user id.
pub const BOT_USER: &str = "UBOT0001";

/// A message the bot posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    /// The channel.
    pub channel: String,
    /// The text.
    pub text: String,
    /// The thread it went to.
    pub thread_ts: Option<String>,
}

/// A file the bot shared (`files.completeUploadExternal`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shared {
    /// The channel.
    pub channel: String,
    /// The file's name, as asked for.
    pub filename: String,
    /// Its bytes, as uploaded.
    pub bytes: Vec<u8>,
    /// The thread it went to.
    pub thread_ts: Option<String>,
}

#[derive(Default)]
struct State {
    bot_token: String,
    app_token: String,
    known: HashSet<String>,
    /// Envelopes sent and not acknowledged yet.
    unacked: Vec<Value>,
    acked: usize,
    connections: usize,
    posted: Vec<Posted>,
    attempts: usize,
    rate_limits: Vec<u64>,
    next: u64,
    /// Upload URLs given: file id → (file name, length asked, bytes uploaded).
    uploads: HashMap<String, (String, usize, Option<Vec<u8>>)>,
    shared: Vec<Shared>,
    /// The REST address (upload URLs point at it).
    rest_addr: Option<SocketAddr>,
    /// Silent death: sockets stay open and say nothing, not even a pong.
    silent: bool,
    /// Pings the bot sent (each answered with a pong while not silent).
    pings: usize,
}

/// The running server.
pub struct SlackServer {
    rest: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
    push: broadcast::Sender<Option<Value>>,
}

impl SlackServer {
    /// Serves an app with these tokens.
    pub fn start(bot_token: &str, app_token: &str) -> Self {
        let state = Arc::new((
            Mutex::new(State {
                bot_token: bot_token.into(),
                app_token: app_token.into(),
                next: 1,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let (push, _) = broadcast::channel(1024);
        let ws = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ws_addr = ws.local_addr().unwrap();
        ws.set_nonblocking(true).unwrap();
        let (socket_state, socket_push) = (state.clone(), push.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(ws).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(socket(
                        stream,
                        socket_state.clone(),
                        socket_push.subscribe(),
                    ));
                }
            });
        });
        let rest = TcpListener::bind("127.0.0.1:0").unwrap();
        let rest_addr = rest.local_addr().unwrap();
        state.0.lock().unwrap().rest_addr = Some(rest_addr);
        let rest_state = state.clone();
        std::thread::spawn(move || {
            for stream in rest.incoming().flatten() {
                let state = rest_state.clone();
                std::thread::spawn(move || {
                    let _ = serve_rest(stream, &state, ws_addr);
                });
            }
        });
        Self {
            rest: rest_addr,
            state,
            push,
        }
    }

    /// Waits until the bot shared `n` files (at most `limit`); what it shared.
    pub fn wait_shared(&self, n: usize, limit: Duration) -> Vec<Shared> {
        self.wait(limit, |s| s.shared.len() >= n);
        self.state.0.lock().unwrap().shared.clone()
    }

    /// The base URL (`[channels.slack] base_url`).
    pub fn url(&self) -> String {
        format!("http://{}", self.rest)
    }

    /// A user writes `text` in `channel` (`im` for a direct message, else `channel`), in
    /// `thread_ts` when given; mentions are written `<@UBOT0001>` as Slack sends them. The
    /// message's ts.
    pub fn user_writes(
        &self,
        channel: &str,
        channel_type: &str,
        user: &str,
        text: &str,
        thread_ts: Option<&str>,
    ) -> String {
        let (lock, _) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.known.insert(channel.into());
        s.next += 1;
        let ts = format!("1795500000.{:06}", s.next);
        let kind = if text.contains(&format!("<@{BOT_USER}>")) && channel_type != "im" {
            "app_mention"
        } else {
            "message"
        };
        let mut event = json!({"type": kind, "channel": channel, "channel_type": channel_type, "user": user, "text": text, "ts": ts});
        if let Some(t) = thread_ts {
            event["thread_ts"] = json!(t);
        }
        let envelope = json!({"envelope_id": format!("env-{}", s.next), "type": "events_api",
            "accepts_response_payload": false, "payload": {"type": "event_callback", "event": event}});
        s.unacked.push(envelope.clone());
        drop(s);
        let _ = self.push.send(Some(envelope));
        ts
    }

    /// Silent death: every socket, open or opened from now on, stays open and says nothing —
    /// no hello, no events, no pong.
    pub fn go_silent(&self) {
        self.state.0.lock().unwrap().silent = true;
    }

    /// The pings the bot sent so far.
    pub fn pings(&self) -> usize {
        self.state.0.lock().unwrap().pings
    }

    /// Sockets opened from now on work again (those that went silent stay so).
    pub fn recover(&self) {
        self.state.0.lock().unwrap().silent = false;
    }

    /// Slack asks every connection to reconnect (`disconnect`, reason `refresh_requested`).
    pub fn refresh(&self) {
        let _ = self.push.send(None);
    }

    /// The next post answers 429 with `Retry-After: secs`.
    pub fn rate_limit_next(&self, secs: u64) {
        self.state.0.lock().unwrap().rate_limits.push(secs);
    }

    /// What the bot posted.
    pub fn posted(&self) -> Vec<Posted> {
        self.state.0.lock().unwrap().posted.clone()
    }

    /// `(posts attempted, envelopes acknowledged, connections)`.
    pub fn counts(&self) -> (usize, usize, usize) {
        let s = self.state.0.lock().unwrap();
        (s.attempts, s.acked, s.connections)
    }

    /// Waits until the bot posted `n` messages (at most `limit`).
    pub fn wait_posted(&self, n: usize, limit: Duration) -> Vec<Posted> {
        self.wait(limit, |s| s.posted.len() >= n);
        self.posted()
    }

    /// Waits until `n` connections were opened (at most `limit`).
    pub fn wait_connections(&self, n: usize, limit: Duration) -> bool {
        self.wait(limit, |s| s.connections >= n)
    }

    fn wait(&self, limit: Duration, done: impl Fn(&State) -> bool) -> bool {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut s = lock.lock().unwrap();
        while !done(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            s = wake.wait_timeout(s, left).unwrap().0;
        }
        true
    }
}

async fn socket(
    stream: tokio::net::TcpStream,
    shared: Arc<(Mutex<State>, Condvar)>,
    mut push: broadcast::Receiver<Option<Value>>,
) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let silent = || shared.0.lock().map(|s| s.silent).unwrap_or(false);
    if silent() {
        // Open, and dead: nothing is read or written on it ever again.
        std::future::pending::<()>().await;
    }
    let pending: Vec<Value> = {
        let (lock, wake) = &*shared;
        let mut s = lock.lock().unwrap();
        s.connections += 1;
        wake.notify_all();
        s.unacked.clone()
    };
    let hello = json!({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A1"}});
    if ws
        .send(Message::Text(hello.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    // Envelopes nobody acknowledged are delivered again.
    for envelope in pending {
        if ws
            .send(Message::Text(envelope.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
    }
    loop {
        if silent() {
            std::future::pending::<()>().await;
        }
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
            incoming = ws.next() => match incoming {
                Some(Ok(Message::Text(t))) => {
                    let frame: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                    if let Some(id) = frame["envelope_id"].as_str() {
                        let (lock, wake) = &*shared;
                        let mut s = lock.lock().unwrap();
                        s.unacked.retain(|e| e["envelope_id"] != id);
                        s.acked += 1;
                        wake.notify_all();
                    }
                }
                Some(Ok(Message::Ping(_))) => shared.0.lock().unwrap().pings += 1,
                Some(Ok(_)) => {}
                _ => return,
            },
            pushed = push.recv() => match pushed {
                Ok(Some(envelope)) => {
                    if ws.send(Message::Text(envelope.to_string().into())).await.is_err() {
                        return;
                    }
                }
                Ok(None) => {
                    let bye = json!({"type": "disconnect", "reason": "refresh_requested"});
                    let _ = ws.send(Message::Text(bye.to_string().into())).await;
                    let _ = ws.close(None).await;
                    return;
                }
                Err(_) => return,
            }
        }
    }
}

fn serve_rest(
    stream: TcpStream,
    shared: &(Mutex<State>, Condvar),
    ws: SocketAddr,
) -> std::io::Result<()> {
    let request = crate::http_request::HttpRequest::read(&stream)?;
    let auth = request
        .header("authorization")
        .unwrap_or_default()
        .trim_start_matches("Bearer ")
        .to_string();
    let (path, body) = (request.path, request.body);
    let params: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, retry, answer) = if let Some(id) = path.strip_prefix("/upload/") {
        upload(shared, id, body)
    } else {
        rest(shared, &path, &auth, &params, ws)
    };
    let body = answer.to_string();
    let retry = retry
        .map(|r| format!("Retry-After: {r}\r\n"))
        .unwrap_or_default();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{retry}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn rest(
    shared: &(Mutex<State>, Condvar),
    path: &str,
    token: &str,
    p: &Value,
    ws: SocketAddr,
) -> (u16, Option<u64>, Value) {
    let (lock, wake) = shared;
    let mut s = lock.lock().unwrap();
    let refuse = |error: &str| (200, None, json!({"ok": false, "error": error}));
    match path.trim_start_matches("/api/") {
        "auth.test" if token == s.bot_token => (
            200,
            None,
            json!({"ok": true, "user_id": BOT_USER, "user": "lurkbot", "team": "T1"}),
        ),
        "apps.connections.open" if token == s.app_token => (
            200,
            None,
            json!({"ok": true, "url": format!("ws://{ws}/link")}),
        ),
        "apps.connections.open" if token == s.bot_token => refuse("not_allowed_token_type"),
        "chat.postMessage" if token == s.bot_token => {
            s.attempts += 1;
            if !s.rate_limits.is_empty() {
                let secs = s.rate_limits.remove(0);
                return (
                    429,
                    Some(secs),
                    json!({"ok": false, "error": "ratelimited"}),
                );
            }
            let channel = p["channel"].as_str().unwrap_or_default();
            let text = p["text"].as_str().unwrap_or_default();
            if !s.known.contains(channel) {
                return refuse("channel_not_found");
            }
            if text.trim().is_empty() {
                return refuse("no_text");
            }
            if text.chars().count() > 40_000 {
                return refuse("msg_too_long");
            }
            s.posted.push(Posted {
                channel: channel.into(),
                text: text.into(),
                thread_ts: p["thread_ts"].as_str().map(str::to_string),
            });
            wake.notify_all();
            (
                200,
                None,
                json!({"ok": true, "channel": channel, "ts": "1795500001.000100"}),
            )
        }
        method if method.starts_with("files.getUploadURLExternal") && token == s.bot_token => {
            let query: HashMap<&str, &str> = method
                .split_once('?')
                .map(|(_, q)| q.split('&').filter_map(|p| p.split_once('=')).collect())
                .unwrap_or_default();
            let (Some(name), Some(length)) = (
                query.get("filename"),
                query.get("length").and_then(|l| l.parse::<usize>().ok()),
            ) else {
                return refuse("invalid_arguments");
            };
            if length == 0 {
                return refuse("invalid_arguments");
            }
            s.next += 1;
            let id = format!("F{:08}", s.next);
            s.uploads
                .insert(id.clone(), ((*name).to_string(), length, None));
            (
                200,
                None,
                json!({"ok": true, "upload_url": format!("http://{}/upload/{id}", s.rest_addr.unwrap()), "file_id": id}),
            )
        }
        "files.completeUploadExternal" if token == s.bot_token => {
            let channel = p["channel_id"].as_str().unwrap_or_default().to_string();
            if !s.known.contains(&channel) {
                return refuse("channel_not_found");
            }
            let Some(files) = p["files"].as_array().filter(|f| !f.is_empty()) else {
                return refuse("invalid_arguments");
            };
            let mut done = Vec::new();
            for file in files {
                let id = file["id"].as_str().unwrap_or_default();
                match s.uploads.get(id) {
                    Some((name, _, Some(bytes))) => done.push(Shared {
                        channel: channel.clone(),
                        filename: name.clone(),
                        bytes: bytes.clone(),
                        thread_ts: p["thread_ts"].as_str().map(str::to_string),
                    }),
                    _ => return refuse("file_not_found"),
                }
            }
            s.shared.extend(done);
            wake.notify_all();
            (200, None, json!({"ok": true, "files": files}))
        }
        _ => refuse("invalid_auth"),
    }
}

/// The upload URL: the bytes must be as long as `files.getUploadURLExternal` was told.
fn upload(shared: &(Mutex<State>, Condvar), id: &str, body: Vec<u8>) -> (u16, Option<u64>, Value) {
    let mut s = shared.0.lock().unwrap();
    match s.uploads.get_mut(id) {
        Some((_, length, bytes)) if *length == body.len() => {
            *bytes = Some(body);
            (200, None, json!("OK"))
        }
        Some(_) => (400, None, json!("length mismatch")),
        None => (404, None, json!("not found")),
    }
}
