//! Meta's WhatsApp Business Cloud API on loopback, written from Meta's documentation, for the
//! channel tests (there is no local server): `POST /<version>/<phone_number_id>/messages`,
//! `POST /<version>/<phone_number_id>/media` (`whatsapp_media`) and
//! `GET /<version>/<media_id>` with the media's bytes behind it, answered as the Graph API
//! answers. It refuses what Meta refuses: a wrong or missing access token (401, code 190), an
//! unknown phone number id (400, code 100), a missing `messaging_product`, an empty text or one
//! over 4,096 characters (400, code 100), and a rate limit when asked (429, code 130429).
//! Notifications are built and signed as Meta builds and signs them (`X-Hub-Signature-256`:
//! the HMAC-SHA256 of the raw body under the app secret).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_request::reply;

/// The API version in the paths (`[channels.whatsapp] base_url` ends with it).
pub const VERSION: &str = "v23.0";

pub use crate::whatsapp_state::{Sent, SentMedia};

use crate::whatsapp_state::{State, graph_error};

/// The running server (its threads end with the test process).
pub struct WhatsAppServer {
    addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl WhatsAppServer {
    /// Serves the number `phone_number_id`, reached with `token`.
    pub fn start(token: &str, phone_number_id: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new((
            Mutex::new(State {
                token: token.to_string(),
                phone_number_id: phone_number_id.to_string(),
                ..State::default()
            }),
            Condvar::new(),
        ));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared, addr);
                });
            }
        });
        Self { addr, state }
    }

    /// The base URL with its version (`[channels.whatsapp] base_url`).
    pub fn url(&self) -> String {
        format!("http://{}/{VERSION}", self.addr)
    }

    /// Keeps `bytes` as media `id` of type `mime` (a picture or voice note a user sends).
    pub fn add_media(&self, id: &str, mime: &str, bytes: Vec<u8>) {
        let mut state = self.state.0.lock().unwrap();
        state.media.push((id.into(), mime.into(), bytes));
    }

    /// Refuses the next `n` sends with 429.
    pub fn rate_limit_next(&self, n: usize) {
        self.state.0.lock().unwrap().rate_limits = n;
    }

    /// What was sent.
    pub fn sent(&self) -> Vec<Sent> {
        self.state.0.lock().unwrap().sent.clone()
    }

    /// Sends tried, accepted or not.
    pub fn attempts(&self) -> usize {
        self.state.0.lock().unwrap().attempts
    }

    /// Waits (at most `limit`) until `n` pictures or voice notes were sent; those sent by then.
    pub fn wait_media(&self, n: usize, limit: Duration) -> Vec<SentMedia> {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut state = lock.lock().unwrap();
        while state.media_sent.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = wake.wait_timeout(state, left).unwrap().0;
        }
        state.media_sent.clone()
    }

    /// Waits (at most `limit`) until `n` messages were sent; what was sent by then.
    pub fn wait_sent(&self, n: usize, limit: Duration) -> Vec<Sent> {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut state = lock.lock().unwrap();
        while state.sent.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = wake.wait_timeout(state, left).unwrap().0;
        }
        state.sent.clone()
    }
}

/// A notification of one text message from `from` (named `name`) with id `wamid`, to
/// `phone_number_id`, as Meta posts it.
pub fn text_notification(
    phone_number_id: &str,
    from: &str,
    name: &str,
    wamid: &str,
    body: &str,
) -> Value {
    notification(
        phone_number_id,
        from,
        name,
        json!({"from": from, "id": wamid, "timestamp": "1764300000", "type": "text",
            "text": {"body": body}}),
    )
}

/// A notification carrying `message` (any type) from `from`.
pub fn notification(phone_number_id: &str, from: &str, name: &str, message: Value) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398",
        "changes": [{"field": "messages", "value": {"messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_number_id},
            "contacts": [{"profile": {"name": name}, "wa_id": from}],
            "messages": [message]}}]}]})
}

/// A notification that our message `wamid` to `recipient` failed with `code` (131047: more
/// than 24 hours since the customer last wrote), as Meta posts it.
pub fn failed_status(phone_number_id: &str, recipient: &str, wamid: &str, code: u32) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398",
        "changes": [{"field": "messages", "value": {"messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_number_id},
            "statuses": [{"id": wamid, "status": "failed", "timestamp": "1764300100",
                "recipient_id": recipient,
                "errors": [{"code": code, "title": "Re-engagement message",
                    "message": "Re-engagement message",
                    "error_data": {"details": "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}}]}]}}]}]})
}

/// `X-Hub-Signature-256` of `body` under `app_secret`, as Meta computes it.
pub fn signature(app_secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, app_secret.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

fn serve(
    stream: TcpStream,
    shared: &(Mutex<State>, Condvar),
    addr: SocketAddr,
) -> std::io::Result<()> {
    let request = crate::http_request::HttpRequest::read(&stream)?;
    let bearer = request
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().to_string());
    let (lock, wake) = shared;
    let mut stream = stream;
    let authorized = bearer == Some(format!("Bearer {}", lock.lock().unwrap().token));
    if !authorized {
        return reply(
            &mut stream,
            401,
            "application/json",
            graph_error(
                190,
                "Invalid OAuth access token - Cannot parse access token",
            )
            .as_bytes(),
        );
    }
    let path = request
        .path
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string();
    if let Some(id) = path.strip_prefix("/media-file/") {
        let found = lock
            .lock()
            .unwrap()
            .media
            .iter()
            .find(|(i, _, _)| i == id)
            .cloned();
        return match found {
            Some((_, mime, bytes)) => reply(&mut stream, 200, &mime, &bytes),
            None => reply(&mut stream, 404, "text/plain", b"no such media"),
        };
    }
    let Some(rest) = path.strip_prefix(&format!("/{VERSION}/")) else {
        return reply(&mut stream, 404, "text/plain", b"unknown version");
    };
    if request.method == "GET" {
        let found = lock
            .lock()
            .unwrap()
            .media
            .iter()
            .find(|(i, _, _)| i == rest)
            .cloned();
        return match found {
            Some((id, mime, bytes)) => {
                let body = json!({"url": format!("http://{addr}/media-file/{id}"), "mime_type": mime,
                    "file_size": bytes.len(), "id": id, "messaging_product": "whatsapp"});
                reply(
                    &mut stream,
                    200,
                    "application/json",
                    body.to_string().as_bytes(),
                )
            }
            None => reply(
                &mut stream,
                400,
                "application/json",
                graph_error(
                    100,
                    &format!("Unsupported get request. Object with ID '{rest}' does not exist"),
                )
                .as_bytes(),
            ),
        };
    }
    let number = lock.lock().unwrap().phone_number_id.clone();
    let (status, answer) = if rest == format!("{number}/media") {
        crate::whatsapp_media::upload(&mut lock.lock().unwrap(), &request)
    } else {
        send(lock, rest, &request.body)
    };
    if status == 200 {
        wake.notify_all();
    }
    reply(&mut stream, status, "application/json", answer.as_bytes())
}

/// `POST /<phone_number_id>/messages`.
fn send(lock: &Mutex<State>, rest: &str, body: &[u8]) -> (u16, String) {
    let mut state = lock.lock().unwrap();
    state.attempts += 1;
    let Some(phone) = rest.strip_suffix("/messages") else {
        return (400, graph_error(100, "Unknown path components"));
    };
    if phone != state.phone_number_id {
        return (
            400,
            graph_error(
                100,
                &format!("Unsupported post request. Object with ID '{phone}' does not exist"),
            ),
        );
    }
    if state.rate_limits > 0 {
        state.rate_limits -= 1;
        return (429, graph_error(130429, "(#130429) Rate limit hit"));
    }
    let message: Value = serde_json::from_slice(body).unwrap_or_default();
    if message["messaging_product"] != "whatsapp" {
        return (
            400,
            graph_error(100, "(#100) The parameter messaging_product is required."),
        );
    }
    let Some(to) = message["to"].as_str().filter(|t| !t.is_empty()) else {
        return (
            400,
            graph_error(100, "(#100) The parameter to is required."),
        );
    };
    if message["type"] == "image" || message["type"] == "audio" {
        return crate::whatsapp_media::media_message(&mut state, to, &message);
    }
    if message["type"] != "text" {
        return (
            400,
            graph_error(
                100,
                "(#100) This server takes text, image and audio messages only.",
            ),
        );
    }
    let text = message["text"]["body"].as_str().unwrap_or_default();
    if text.trim().is_empty() {
        return (
            400,
            graph_error(100, "(#100) The parameter text['body'] is required."),
        );
    }
    if text.chars().count() > 4096 {
        return (
            400,
            graph_error(
                100,
                "(#100) Param text['body'] must be at most 4096 characters long.",
            ),
        );
    }
    state.sent.push(Sent {
        to: to.to_string(),
        body: text.to_string(),
        reply_to: message["context"]["message_id"]
            .as_str()
            .map(str::to_string),
    });
    let id = format!("wamid.OUT{}", state.sent.len());
    (
        200,
        json!({"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": id}]})
        .to_string(),
    )
}
