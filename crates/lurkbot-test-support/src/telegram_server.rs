//! A Telegram Bot API server on loopback, written from the Bot API documentation, for the
//! channel tests (Telegram has no local server). It speaks the real wire format — `POST
//! /bot<token>/<method>` with a JSON body, answers `{"ok":true,"result":…}` or
//! `{"ok":false,"error_code","description","parameters":{"retry_after"}}` — and refuses what
//! Telegram refuses: a wrong token (401), an unknown chat (400 "chat not found"), a text over
//! 4,096 characters (400 "message is too long"), an empty text, MarkdownV2 with an unescaped
//! reserved character (400 "can't parse entities"), a chat that blocked the bot (403), a second
//! `getUpdates` while one waits (409: it ends the older one, as with two bot instances). Tests
//! queue user messages, script 429s and 5xx, and read what the bot sent.

use std::collections::HashSet;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use crate::telegram_voice::SentVoice;

/// The bot's id and username, as `getMe` answers.
pub const BOT_ID: i64 = 99;
/// The bot's username.
pub const BOT_USERNAME: &str = "lurk_test_bot";

/// A message the bot sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The chat.
    pub chat_id: String,
    /// The text as sent (MarkdownV2).
    pub text: String,
    /// The message it replies to.
    pub reply_to: Option<i64>,
}

#[derive(Default)]
pub(crate) struct State {
    updates: Vec<Value>,
    next_update: i64,
    pub(crate) next_message: i64,
    pub(crate) known_chats: HashSet<String>,
    pub(crate) blocked: HashSet<String>,
    sent: Vec<Sent>,
    send_attempts: usize,
    /// Answers for the next sends: (status, description, retry_after).
    scripted: Vec<(u16, String, Option<u64>)>,
    offsets: Vec<i64>,
    pub(crate) voices: Vec<SentVoice>,
    /// Updates the bot confirmed (kept to serve again: [`TelegramServer::serve_again`]).
    confirmed: Vec<Value>,
    /// Uploaded files: (file_id, file_path, bytes).
    files: Vec<(String, String, Vec<u8>)>,
    /// The `getUpdates` calls so far: a newer one ends an older one still waiting.
    polls: u64,
    /// `getUpdates` calls ended by another (Telegram's 409: two bot instances polling).
    conflicts: usize,
    /// Silent death: a `getUpdates` is taken and never answered.
    silent: bool,
}

/// The running server (stopped when dropped: its threads end with the test process).
pub struct TelegramServer {
    addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl TelegramServer {
    /// Serves the bot whose token is `token`.
    pub fn start(token: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new((
            Mutex::new(State {
                next_update: 1000,
                next_message: 1,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let shared = state.clone();
        let prefix = format!("/bot{token}/");
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (shared, prefix) = (shared.clone(), prefix.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared, &prefix);
                });
            }
        });
        Self { addr, state }
    }

    /// The base URL (`[channels.telegram] base_url`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A user writes `text` in chat `chat_id` (`private` or `supergroup`); the chat becomes
    /// known. The update's id.
    pub fn user_writes(
        &self,
        chat_id: i64,
        from: i64,
        username: &str,
        kind: &str,
        text: &str,
    ) -> i64 {
        let user =
            json!({"id": from, "is_bot": false, "first_name": username, "username": username});
        self.message_from(chat_id, user, kind, text)
    }

    /// A user with no username, only a first name (which anybody may choose), writes in a
    /// private chat.
    pub fn nameless_user_writes(
        &self,
        chat_id: i64,
        from: i64,
        first_name: &str,
        text: &str,
    ) -> i64 {
        let user = json!({"id": from, "is_bot": false, "first_name": first_name});
        self.message_from(chat_id, user, "private", text)
    }

    /// A user forwards into a private chat a message first written by `origin_name` (Bot API
    /// 7's `forward_origin` of type `user`).
    pub fn user_forwards(
        &self,
        chat_id: i64,
        from: i64,
        username: &str,
        origin_name: &str,
        text: &str,
    ) -> i64 {
        let user =
            json!({"id": from, "is_bot": false, "first_name": username, "username": username});
        let id = self.message_from(chat_id, user, "private", text);
        let (lock, _) = &*self.state;
        let mut s = lock.lock().unwrap();
        if let Some(update) = s.updates.iter_mut().rev().find(|u| u["update_id"] == id) {
            update["message"]["forward_origin"] = json!({"type": "user", "date": 1_795_400_000,
                "sender_user": {"id": 999, "is_bot": false, "first_name": origin_name}});
        }
        id
    }

    fn message_from(&self, chat_id: i64, user: serde_json::Value, kind: &str, text: &str) -> i64 {
        let (lock, wake) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.next_update += 1;
        s.next_message += 1;
        let update = json!({"update_id": s.next_update, "message": {
            "message_id": s.next_message, "date": 1_795_500_000, "text": text,
            "from": user,
            "chat": {"id": chat_id, "type": kind}}});
        s.known_chats.insert(chat_id.to_string());
        s.updates.push(update);
        let id = s.next_update;
        wake.notify_all();
        id
    }

    /// A user sends a document (`file_name`, `bytes`) with `caption` in a private chat.
    pub fn user_sends_document(
        &self,
        chat_id: i64,
        from: i64,
        username: &str,
        file_name: &str,
        bytes: &[u8],
        caption: &str,
    ) {
        let (lock, wake) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.next_update += 1;
        s.next_message += 1;
        let file_id = format!("doc{}", s.next_update);
        let path = format!("documents/file_{}.bin", s.next_update);
        s.files.push((file_id.clone(), path, bytes.to_vec()));
        let update = json!({"update_id": s.next_update, "message": {
            "message_id": s.next_message, "date": 1_795_500_000, "caption": caption,
            "document": {"file_id": file_id, "file_unique_id": format!("u{file_id}"), "file_name": file_name, "file_size": bytes.len()},
            "from": {"id": from, "is_bot": false, "first_name": username, "username": username},
            "chat": {"id": chat_id, "type": "private"}}});
        s.known_chats.insert(chat_id.to_string());
        s.updates.push(update);
        wake.notify_all();
    }

    /// A user sends a photo (`bytes`, the largest size; Telegram also lists a thumbnail) with
    /// `caption` in a private chat.
    pub fn user_sends_photo(
        &self,
        chat_id: i64,
        from: i64,
        username: &str,
        bytes: &[u8],
        caption: &str,
    ) {
        let (lock, wake) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.next_update += 1;
        s.next_message += 1;
        let id = s.next_update;
        let (thumb, large) = (format!("thumb{id}"), format!("photo{id}"));
        s.files.push((
            thumb.clone(),
            format!("photos/file_{id}_s.jpg"),
            bytes.to_vec(),
        ));
        s.files.push((
            large.clone(),
            format!("photos/file_{id}.jpg"),
            bytes.to_vec(),
        ));
        let update = json!({"update_id": id, "message": {
            "message_id": s.next_message, "date": 1_795_500_000, "caption": caption,
            "photo": [
                {"file_id": thumb, "file_unique_id": format!("u{thumb}"), "width": 90, "height": 60, "file_size": bytes.len()},
                {"file_id": large, "file_unique_id": format!("u{large}"), "width": 1280, "height": 853, "file_size": bytes.len()}
            ],
            "from": {"id": from, "is_bot": false, "first_name": username, "username": username},
            "chat": {"id": chat_id, "type": "private"}}});
        s.known_chats.insert(chat_id.to_string());
        s.updates.push(update);
        wake.notify_all();
    }

    /// A user records a voice note (`bytes`, OGG/Opus) of `duration` seconds in a private
    /// chat: a `voice` message, whose file Telegram keeps as `voice/file_<n>.oga`.
    pub fn user_sends_voice(
        &self,
        chat_id: i64,
        from: i64,
        username: &str,
        bytes: &[u8],
        duration: u64,
    ) {
        let (lock, wake) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.next_update += 1;
        s.next_message += 1;
        let id = s.next_update;
        let file_id = format!("voice{id}");
        s.files.push((
            file_id.clone(),
            format!("voice/file_{id}.oga"),
            bytes.to_vec(),
        ));
        let update = json!({"update_id": id, "message": {
            "message_id": s.next_message, "date": 1_795_500_000,
            "voice": {"file_id": file_id, "file_unique_id": format!("u{file_id}"), "duration": duration,
                "mime_type": "audio/ogg", "file_size": bytes.len()},
            "from": {"id": from, "is_bot": false, "first_name": username, "username": username},
            "chat": {"id": chat_id, "type": "private"}}});
        s.known_chats.insert(chat_id.to_string());
        s.updates.push(update);
        wake.notify_all();
    }

    /// The voice notes the bot sent so far.
    pub fn voices(&self) -> Vec<SentVoice> {
        self.state.0.lock().unwrap().voices.clone()
    }

    /// Waits until the bot sent `n` voice notes (at most `limit`); what it sent.
    pub fn wait_voices(&self, n: usize, limit: Duration) -> Vec<SentVoice> {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut s = lock.lock().unwrap();
        while s.voices.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = wake.wait_timeout(s, left).unwrap().0;
        }
        s.voices.clone()
    }

    /// A user opened a chat with the bot (`/start`) without a message waiting: the bot may
    /// write to it.
    pub fn user_started(&self, chat_id: i64) {
        self.state
            .0
            .lock()
            .unwrap()
            .known_chats
            .insert(chat_id.to_string());
    }

    /// What the bot sent so far.
    pub fn sent(&self) -> Vec<Sent> {
        self.state.0.lock().unwrap().sent.clone()
    }

    /// Waits until the bot sent `n` messages (at most `limit`); what it sent.
    pub fn wait_sent(&self, n: usize, limit: Duration) -> Vec<Sent> {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut s = lock.lock().unwrap();
        while s.sent.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = wake.wait_timeout(s, left).unwrap().0;
        }
        s.sent.clone()
    }

    /// Waits until `getUpdates` was called `n` times (at most `limit`); every offset asked.
    pub fn wait_offsets(&self, n: usize, limit: Duration) -> Vec<i64> {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut s = lock.lock().unwrap();
        while s.offsets.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = wake.wait_timeout(s, left).unwrap().0;
        }
        s.offsets.clone()
    }

    /// Serves the confirmed update `update_id` once more, as Telegram does when the bot died
    /// before its confirmation (the next `getUpdates` offset) reached it. False when no such
    /// update was confirmed.
    pub fn serve_again(&self, update_id: i64) -> bool {
        let (lock, wake) = &*self.state;
        let mut s = lock.lock().unwrap();
        let Some(update) = s
            .confirmed
            .iter()
            .find(|u| u["update_id"].as_i64() == Some(update_id))
            .cloned()
        else {
            return false;
        };
        s.updates.push(update);
        wake.notify_all();
        true
    }

    /// Silent death (`true`): each `getUpdates` from now on is held open, never answered.
    pub fn silent(&self, silent: bool) {
        self.state.0.lock().unwrap().silent = silent;
    }

    /// `getUpdates` calls ended by a newer one (two bot instances polling at once).
    pub fn conflicts(&self) -> usize {
        self.state.0.lock().unwrap().conflicts
    }

    /// `sendMessage` calls so far, refused ones included.
    pub fn send_attempts(&self) -> usize {
        self.state.0.lock().unwrap().send_attempts
    }

    /// The `offset` of every `getUpdates` so far.
    pub fn offsets(&self) -> Vec<i64> {
        self.state.0.lock().unwrap().offsets.clone()
    }

    /// The next `n` sends answer 429 with `retry_after` seconds.
    pub fn rate_limit_next(&self, n: usize, retry_after: u64) {
        let mut s = self.state.0.lock().unwrap();
        for _ in 0..n {
            s.scripted.push((
                429,
                format!("Too Many Requests: retry after {retry_after}"),
                Some(retry_after),
            ));
        }
    }

    /// The next send answers a 502.
    pub fn fail_next(&self) {
        let mut s = self.state.0.lock().unwrap();
        s.scripted.push((502, "Bad Gateway".into(), None));
    }

    /// The user of `chat_id` blocks the bot.
    pub fn block(&self, chat_id: i64) {
        self.state
            .0
            .lock()
            .unwrap()
            .blocked
            .insert(chat_id.to_string());
    }
}

fn serve(stream: TcpStream, shared: &(Mutex<State>, Condvar), prefix: &str) -> std::io::Result<()> {
    let request = crate::http_request::HttpRequest::read(&stream)?;
    if request.path == format!("{prefix}sendVoice") {
        let (status, answer) = crate::telegram_voice::send_voice(shared, &request);
        let body = answer.to_string();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        return stream.flush();
    }
    let (path, body) = (request.path, request.body);
    let params: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let file_prefix = format!("/file{}", prefix.trim_end_matches('/'));
    if let Some(file_path) = path.strip_prefix(&format!("{file_prefix}/")) {
        let found = shared
            .0
            .lock()
            .unwrap()
            .files
            .iter()
            .find(|(_, p, _)| p == file_path)
            .map(|(_, _, b)| b.clone());
        let mut stream = stream;
        return match found {
            Some(bytes) => {
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    bytes.len()
                )?;
                stream.write_all(&bytes)?;
                stream.flush()
            }
            None => {
                write!(
                    stream,
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )?;
                stream.flush()
            }
        };
    }
    let (status, answer) = match path.strip_prefix(prefix) {
        None => (
            401,
            json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        ),
        Some(method) => answer(shared, method, &params),
    };
    let body = answer.to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

pub(crate) fn error(status: u16, description: &str, retry_after: Option<u64>) -> (u16, Value) {
    let mut v = json!({"ok": false, "error_code": status, "description": description});
    if let Some(r) = retry_after {
        v["parameters"] = json!({"retry_after": r});
    }
    (status, v)
}

fn answer(shared: &(Mutex<State>, Condvar), method: &str, p: &Value) -> (u16, Value) {
    let (lock, wake) = shared;
    match method {
        "getMe" => (
            200,
            json!({"ok": true, "result": {"id": BOT_ID, "is_bot": true,
            "first_name": "Lurk", "username": BOT_USERNAME}}),
        ),
        "getUpdates" => {
            let offset = p["offset"].as_i64().unwrap_or(0);
            let wait = Duration::from_secs(p["timeout"].as_u64().unwrap_or(0).min(30));
            let deadline = Instant::now() + wait;
            let mut s = lock.lock().unwrap();
            if s.silent {
                drop(s);
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            s.offsets.push(offset);
            s.polls += 1;
            let mine = s.polls;
            wake.notify_all();
            // Confirmed updates (below the offset) are forgotten, as Telegram does.
            let (kept, confirmed): (Vec<Value>, Vec<Value>) = std::mem::take(&mut s.updates)
                .into_iter()
                .partition(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            s.updates = kept;
            s.confirmed.extend(confirmed);
            while s.updates.is_empty() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                s = wake.wait_timeout(s, left).unwrap().0;
                // Another instance polls now: Telegram ends this one.
                if s.polls != mine {
                    s.conflicts += 1;
                    return error(
                        409,
                        "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                        None,
                    );
                }
            }
            (200, json!({"ok": true, "result": s.updates.clone()}))
        }
        "sendChatAction" => (200, json!({"ok": true, "result": true})),
        "getFile" => {
            let s = lock.lock().unwrap();
            let id = p["file_id"].as_str().unwrap_or_default();
            match s.files.iter().find(|(f, _, _)| f == id) {
                Some((f, path, bytes)) => (
                    200,
                    json!({"ok": true, "result": {"file_id": f, "file_unique_id": format!("u{f}"), "file_size": bytes.len(), "file_path": path}}),
                ),
                None => error(400, "Bad Request: invalid file_id", None),
            }
        }
        "sendMessage" => {
            let mut s = lock.lock().unwrap();
            s.send_attempts += 1;
            if !s.scripted.is_empty() {
                let (status, description, retry) = s.scripted.remove(0);
                return error(status, &description, retry);
            }
            let chat = match &p["chat_id"] {
                Value::String(c) => c.clone(),
                Value::Number(n) => n.to_string(),
                _ => return error(400, "Bad Request: chat_id is empty", None),
            };
            let text = p["text"].as_str().unwrap_or_default();
            if !s.known_chats.contains(&chat) {
                return error(400, "Bad Request: chat not found", None);
            }
            if s.blocked.contains(&chat) {
                return error(403, "Forbidden: bot was blocked by the user", None);
            }
            if text.trim().is_empty() {
                return error(400, "Bad Request: message text is empty", None);
            }
            if text.chars().count() > 4096 {
                return error(400, "Bad Request: message is too long", None);
            }
            if p["parse_mode"] == "MarkdownV2"
                && let Some(c) = unescaped_reserved(text)
            {
                return error(
                    400,
                    &format!(
                        "Bad Request: can't parse entities: Character '{c}' is reserved and must be escaped with the preceding '\\'"
                    ),
                    None,
                );
            }
            s.sent.push(Sent {
                chat_id: chat.clone(),
                text: text.to_string(),
                reply_to: p
                    .pointer("/reply_parameters/message_id")
                    .and_then(Value::as_i64),
            });
            s.next_message += 1;
            let id = s.next_message;
            wake.notify_all();
            (
                200,
                json!({"ok": true, "result": {"message_id": id, "chat": {"id": chat}, "text": text}}),
            )
        }
        _ => error(404, "Not Found", None),
    }
}

/// The first reserved MarkdownV2 character left unescaped outside code (formatting marks
/// `*` and `` ` `` excepted).
fn unescaped_reserved(text: &str) -> Option<char> {
    let mut chars = text.chars();
    let mut in_code = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '`' => in_code = !in_code,
            _ if in_code => {}
            _ if "_[]()~>#+-=|{}.!".contains(c) => return Some(c),
            _ => {}
        }
    }
    None
}
