//! A Discord server on loopback, written from Discord's developer documentation, for the
//! channel tests (Discord has no local server): the REST API (`GET /api/v10/gateway/bot`,
//! `POST /channels/{id}/messages` and `/typing`, `Authorization: Bot <token>`) and the Gateway
//! WebSocket (opcode 10 Hello, 2 Identify, 1 Heartbeat and 11 its ack, 0 Dispatch with READY,
//! MESSAGE_CREATE and RESUMED, 6 Resume replaying what a dropped session missed). It refuses
//! what Discord refuses: a wrong token (REST 401, gateway close 4004), an unknown channel
//! (404, code 10003), content over 2,000 characters or empty (400, code 50035), a user who
//! blocked the bot (403, code 50007), a `nonce` over 25 characters (400); a repeated `nonce`
//! with `enforce_nonce` returns the message it made instead of a second one; without the
//! message content intent, message content arrives empty, as Discord sends it. Tests script 429s and read what the bot sent.

use std::collections::HashSet;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

/// The bot's user id.
pub const BOT_ID: &str = "900000000000000001";
const MESSAGE_CONTENT: u64 = 1 << 15;

/// A message the bot sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The channel.
    pub channel_id: String,
    /// The content.
    pub content: String,
    /// The message it replies to.
    pub reply_to: Option<String>,
    /// Files uploaded with it (a multipart message): file name, `Content-Type`, bytes.
    pub files: Vec<(String, Option<String>, Vec<u8>)>,
}

#[derive(Default)]
struct State {
    token: String,
    seq: u64,
    dispatched: Vec<Value>,
    sessions: HashSet<String>,
    content_intent: bool,
    known: HashSet<String>,
    blocked: HashSet<String>,
    sent: Vec<Sent>,
    send_attempts: usize,
    scripted: Vec<f64>,
    identifies: usize,
    resumes: usize,
    next_id: u64,
    /// Messages created with `enforce_nonce`, by nonce: a repeated nonce returns its message.
    nonces: std::collections::HashMap<String, Value>,
    /// Silent death: sockets stay open and say nothing — no hello, no event, no heartbeat ACK.
    silent: bool,
    /// Heartbeats acknowledged so far.
    acked_heartbeats: usize,
}

/// What the sockets are told.
#[derive(Clone, Debug)]
enum Push {
    Frame(Value),
    Drop,
}

/// The running server.
pub struct DiscordServer {
    rest: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
    push: broadcast::Sender<Push>,
}

impl DiscordServer {
    /// Serves the bot whose token is `token`; the gateway asks for a heartbeat every
    /// `heartbeat_ms`.
    pub fn start(token: &str, heartbeat_ms: u64) -> Self {
        let state = Arc::new((
            Mutex::new(State {
                token: token.into(),
                next_id: 1_000,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let (push, _) = broadcast::channel(1024);
        let ws = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ws_addr = ws.local_addr().unwrap();
        ws.set_nonblocking(true).unwrap();
        let (gateway_state, gateway_push) = (state.clone(), push.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(ws).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    let (s, p) = (gateway_state.clone(), gateway_push.subscribe());
                    tokio::spawn(gateway(stream, s, p, heartbeat_ms));
                }
            });
        });
        let rest = TcpListener::bind("127.0.0.1:0").unwrap();
        let rest_addr = rest.local_addr().unwrap();
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

    /// The base URL (`[channels.discord] base_url`).
    pub fn url(&self) -> String {
        format!("http://{}", self.rest)
    }

    /// A user writes in channel `channel_id` (`guild_id` for a server channel, none for a
    /// direct message), mentioning the bot when `mention` is set.
    pub fn user_writes(
        &self,
        channel_id: &str,
        guild_id: Option<&str>,
        author: &str,
        name: &str,
        content: &str,
        mention: bool,
    ) {
        let (lock, wake) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.known.insert(channel_id.to_string());
        s.next_id += 1;
        s.seq += 1;
        let content = if s.content_intent { content } else { "" };
        let mentions: Vec<Value> = if mention {
            vec![json!({"id": BOT_ID, "username": "lurkbot", "bot": true})]
        } else {
            vec![]
        };
        let mut d = json!({"id": s.next_id.to_string(), "channel_id": channel_id, "content": content,
            "author": {"id": author, "username": name}, "mentions": mentions, "attachments": [],
            "timestamp": "2026-11-24T09:00:00.000000+00:00"});
        if let Some(g) = guild_id {
            d["guild_id"] = json!(g);
        }
        let frame = json!({"op": 0, "t": "MESSAGE_CREATE", "s": s.seq, "d": d});
        s.dispatched.push(frame.clone());
        wake.notify_all();
        drop(s);
        let _ = self.push.send(Push::Frame(frame));
    }

    /// Silent death (`true`): every socket, open or opened from now on, says nothing again;
    /// `false`: sockets opened from now on work.
    pub fn silent(&self, silent: bool) {
        self.state.0.lock().unwrap().silent = silent;
    }

    /// The heartbeats acknowledged so far.
    pub fn acked_heartbeats(&self) -> usize {
        self.state.0.lock().unwrap().acked_heartbeats
    }

    /// Closes every gateway connection (as a network drop would).
    pub fn drop_connections(&self) {
        let _ = self.push.send(Push::Drop);
    }

    /// The user of `channel_id` blocks the bot.
    pub fn block(&self, channel_id: &str) {
        self.state
            .0
            .lock()
            .unwrap()
            .blocked
            .insert(channel_id.into());
    }

    /// The next message send answers 429 with `retry_after` seconds.
    pub fn rate_limit_next(&self, retry_after: f64) {
        self.state.0.lock().unwrap().scripted.push(retry_after);
    }

    /// What the bot sent.
    pub fn sent(&self) -> Vec<Sent> {
        self.state.0.lock().unwrap().sent.clone()
    }

    /// Sends attempted, refused ones included.
    pub fn send_attempts(&self) -> usize {
        self.state.0.lock().unwrap().send_attempts
    }

    /// Identify and Resume requests so far.
    pub fn handshakes(&self) -> (usize, usize) {
        let s = self.state.0.lock().unwrap();
        (s.identifies, s.resumes)
    }

    /// Waits until the bot sent `n` messages (at most `limit`).
    pub fn wait_sent(&self, n: usize, limit: Duration) -> Vec<Sent> {
        self.wait(limit, |s| s.sent.len() >= n);
        self.sent()
    }

    /// Waits until the bot identified (and so may receive messages), at most `limit`.
    pub fn wait_ready(&self, handshakes: usize, limit: Duration) -> bool {
        self.wait(limit, |s| s.identifies + s.resumes >= handshakes)
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

/// How a connection's first frame is answered.
enum Start {
    Refuse(u16, &'static str),
    Invalid,
    Replay(Vec<Value>),
}

fn handshake(shared: &(Mutex<State>, Condvar), first: &Value) -> Start {
    let (lock, wake) = shared;
    let mut s = lock.lock().unwrap();
    if first["d"]["token"] != s.token {
        return Start::Refuse(4004, "Authentication failed.");
    }
    match first["op"].as_u64() {
        Some(2) => {
            s.identifies += 1;
            s.content_intent = first["d"]["intents"].as_u64().unwrap_or(0) & MESSAGE_CONTENT != 0;
            let session = format!("sess{}", s.identifies);
            s.sessions.insert(session.clone());
            s.seq += 1;
            let ready = json!({"op": 0, "t": "READY", "s": s.seq, "d": {"v": 10, "session_id": session,
                "resume_gateway_url": "", "user": {"id": BOT_ID, "username": "lurkbot", "bot": true}, "guilds": []}});
            s.dispatched.push(ready.clone());
            wake.notify_all();
            Start::Replay(vec![ready])
        }
        Some(6) => {
            let known = first["d"]["session_id"]
                .as_str()
                .is_some_and(|id| s.sessions.contains(id));
            if !known {
                return Start::Invalid;
            }
            s.resumes += 1;
            let after = first["d"]["seq"].as_u64().unwrap_or(0);
            let mut missed: Vec<Value> = s
                .dispatched
                .iter()
                .filter(|f| f["s"].as_u64().unwrap_or(0) > after)
                .cloned()
                .collect();
            s.seq += 1;
            let resumed = json!({"op": 0, "t": "RESUMED", "s": s.seq, "d": {}});
            s.dispatched.push(resumed.clone());
            missed.push(resumed);
            wake.notify_all();
            Start::Replay(missed)
        }
        _ => Start::Refuse(4003, "Not authenticated."),
    }
}

async fn gateway(
    stream: tokio::net::TcpStream,
    shared: Arc<(Mutex<State>, Condvar)>,
    mut push: broadcast::Receiver<Push>,
    heartbeat_ms: u64,
) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let silent = || shared.0.lock().map(|s| s.silent).unwrap_or(false);
    if silent() {
        std::future::pending::<()>().await;
    }
    let hello = json!({"op": 10, "d": {"heartbeat_interval": heartbeat_ms}});
    if ws
        .send(Message::Text(hello.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    let close = |code: u16, reason: &str| {
        Message::Close(Some(CloseFrame {
            code: code.into(),
            reason: reason.to_string().into(),
        }))
    };
    // The first frame: Identify or Resume.
    let first: Value = match ws.next().await {
        Some(Ok(Message::Text(t))) => serde_json::from_str(t.as_str()).unwrap_or(Value::Null),
        _ => return,
    };
    let start = handshake(&shared, &first);
    let replay = match start {
        Start::Refuse(code, reason) => {
            let _ = ws.send(close(code, reason)).await;
            return;
        }
        Start::Invalid => {
            let _ = ws
                .send(Message::Text(
                    json!({"op": 9, "d": false}).to_string().into(),
                ))
                .await;
            return;
        }
        Start::Replay(frames) => frames,
    };
    for frame in replay {
        if ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
    }
    loop {
        if silent() {
            // Open, and dead: nothing is read or written on it ever again.
            std::future::pending::<()>().await;
        }
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
            incoming = ws.next() => match incoming {
                Some(Ok(Message::Text(t))) => {
                    let frame: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                    if frame["op"] == 1 {
                        if ws.send(Message::Text(json!({"op": 11}).to_string().into())).await.is_err() {
                            return;
                        }
                        shared.0.lock().unwrap().acked_heartbeats += 1;
                    }
                }
                Some(Ok(_)) => {}
                _ => return,
            },
            pushed = push.recv() => match pushed {
                Ok(Push::Frame(frame)) => {
                    if ws.send(Message::Text(frame.to_string().into())).await.is_err() {
                        return;
                    }
                }
                Ok(Push::Drop) => {
                    let _ = ws.send(close(4000, "Unknown error.")).await;
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
        .to_string();
    // A message with files is multipart: its JSON is the `payload_json` part, each file a
    // `files[n]` part.
    let parts = request.multipart();
    let files: Vec<_> = parts
        .iter()
        .filter(|p| p.name.starts_with("files[") && p.file_name.is_some())
        .map(|p| {
            (
                p.file_name.clone().unwrap_or_default(),
                p.content_type.clone(),
                p.bytes.clone(),
            )
        })
        .collect();
    let params: Value = match parts.iter().find(|p| p.name == "payload_json") {
        Some(payload) => serde_json::from_slice(&payload.bytes).unwrap_or(Value::Null),
        None => serde_json::from_slice(&request.body).unwrap_or(Value::Null),
    };
    let (method, path) = (request.method, request.path);
    let (status, answer) = rest(shared, &method, &path, &auth, &params, files, ws);
    let body = if status == 204 {
        String::new()
    } else {
        answer.to_string()
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn rest(
    shared: &(Mutex<State>, Condvar),
    method: &str,
    path: &str,
    auth: &str,
    p: &Value,
    files: Vec<(String, Option<String>, Vec<u8>)>,
    ws: SocketAddr,
) -> (u16, Value) {
    let (lock, wake) = shared;
    let mut s = lock.lock().unwrap();
    if auth != format!("Bot {}", s.token) {
        return (401, json!({"message": "401: Unauthorized", "code": 0}));
    }
    let parts: Vec<&str> = path.trim_start_matches("/api/v10/").split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", ["gateway", "bot"]) => (
            200,
            json!({"url": format!("ws://{ws}"), "shards": 1,
            "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}}),
        ),
        ("POST", ["channels", id, "typing"]) if s.known.contains(*id) => (204, Value::Null),
        ("POST", ["channels", id, "messages"]) => {
            s.send_attempts += 1;
            if !s.scripted.is_empty() {
                let wait = s.scripted.remove(0);
                return (
                    429,
                    json!({"message": "You are being rate limited.", "retry_after": wait, "global": false}),
                );
            }
            let content = p["content"].as_str().unwrap_or_default();
            if !s.known.contains(*id) {
                return (404, json!({"message": "Unknown Channel", "code": 10003}));
            }
            if s.blocked.contains(*id) {
                return (
                    403,
                    json!({"message": "Cannot send messages to this user", "code": 50007}),
                );
            }
            // A message needs content or a file (Discord: "Cannot send an empty message").
            if content.trim().is_empty() && files.is_empty() {
                return (
                    400,
                    json!({"message": "Cannot send an empty message", "code": 50006}),
                );
            }
            if content.chars().count() > 2000 || files.len() > 10 {
                return (400, json!({"message": "Invalid Form Body", "code": 50035}));
            }
            // `nonce` is at most 25 characters; with `enforce_nonce`, a nonce used before
            // returns the message it created and creates none.
            let nonce = match &p["nonce"] {
                Value::String(n) => Some(n.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            };
            if nonce.as_ref().is_some_and(|n| n.chars().count() > 25) {
                return (400, json!({"message": "Invalid Form Body", "code": 50035}));
            }
            let enforced = nonce.filter(|_| p["enforce_nonce"] == true);
            if let Some(created) = enforced.as_ref().and_then(|n| s.nonces.get(n)) {
                return (200, created.clone());
            }
            s.sent.push(Sent {
                channel_id: (*id).to_string(),
                content: content.to_string(),
                reply_to: p
                    .pointer("/message_reference/message_id")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                files,
            });
            s.next_id += 1;
            let id_out = s.next_id.to_string();
            let created = json!({"id": id_out, "channel_id": id, "content": content});
            if let Some(nonce) = enforced {
                s.nonces.insert(nonce, created.clone());
            }
            wake.notify_all();
            (200, created)
        }
        _ => (404, json!({"message": "404: Not Found", "code": 0})),
    }
}
