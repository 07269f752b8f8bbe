//! signal-cli's HTTP daemon (`signal-cli -a ACCOUNT daemon --http`) on loopback, written from
//! its documentation and source (`signal-cli-jsonrpc(5)`, `HttpServerHandler`), for the channel
//! tests: Signal's own service cannot run here. `GET /api/v1/events` is a server-sent events
//! stream — each message an `event:receive` whose `data:` is `{"account", "envelope"}`, and a
//! `:` keep-alive comment every 15 s (configurable) — that holds messages until a client
//! connects, as `--receive-mode on-connection` does; `POST /api/v1/rpc` answers JSON-RPC
//! (`rpc.rs`: `send`, `sendTyping`, `sendReceipt`, `getAttachment`); `GET /api/v1/check` is 200.
//! It refuses what signal-cli refuses: a `Host` that is not loopback (421), a wrong method
//! (405), an RPC body that is not `application/json` (415), an unknown `account` (400), and in
//! JSON-RPC an unknown method (-32601), a message to an unregistered number or unknown group,
//! an empty message, a text style out of range (-1), and a rate limit when asked (-5).

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_request::{HttpRequest, reply};

use crate::signal_state::State;
pub use crate::signal_state::{Call, OWN_UUID};

/// The running daemon (its threads end with the test process).
pub struct SignalServer {
    addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl SignalServer {
    /// Serves `account` (`+15550001111`) on a free loopback port.
    pub fn start(account: &str) -> Self {
        Self::start_on(account, 0)
    }

    /// Serves `account` on loopback `port` (0: any free port).
    pub fn start_on(account: &str, port: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new((
            Mutex::new(State {
                account: account.to_string(),
                clock: 1_764_300_000_000,
                keep_alive: Duration::from_secs(15),
                ..State::default()
            }),
            Condvar::new(),
        ));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        Self { addr, state }
    }

    /// `http://127.0.0.1:PORT` (`[channels.signal] base_url`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let (lock, wake) = &*self.state;
        let out = f(&mut lock.lock().unwrap());
        wake.notify_all();
        out
    }

    /// Numbers Signal knows (others are refused as unregistered).
    pub fn register(&self, number: &str) {
        self.with(|s| s.registered.push(number.to_string()));
    }

    /// A group the account is a member of.
    pub fn add_group(&self, id: &str) {
        self.with(|s| s.groups.push(id.to_string()));
    }

    /// Keeps `bytes` as attachment `id`.
    pub fn add_attachment(&self, id: &str, bytes: Vec<u8>) {
        self.with(|s| s.attachments.push((id.to_string(), bytes)));
    }

    /// Refuses the next `n` sends with signal-cli's rate-limit error (-5).
    pub fn rate_limit_next(&self, n: usize) {
        self.with(|s| s.rate_limits = n);
    }

    /// Keep-alive comments every `every` instead of 15 s.
    pub fn keep_alive_every(&self, every: Duration) {
        self.with(|s| s.keep_alive = every);
    }

    /// Silent death: open streams stay open and say nothing again, not even keep-alives;
    /// `check` fails too when `check_fails`. Messages wait for a new stream.
    pub fn go_silent(&self, check_fails: bool) {
        self.with(|s| {
            s.silent = true;
            s.generation += 1;
            s.check_fails = check_fails;
        });
    }

    /// Alive again.
    pub fn recover(&self) {
        self.with(|s| {
            s.silent = false;
            s.check_fails = false;
        });
    }

    /// Open event streams now.
    pub fn connections(&self) -> usize {
        self.with(|s| s.connections)
    }

    /// `number` (with `uuid`, named `name`) writes `data` (a `dataMessage`'s fields besides
    /// `timestamp`); the message's timestamp.
    pub fn user_sends(&self, number: &str, uuid: &str, name: &str, data: Value) -> u64 {
        self.with(|s| {
            s.clock += 1000;
            let timestamp = s.clock;
            let mut message = json!({"timestamp": timestamp, "expiresInSeconds": 0, "viewOnce": false});
            if let (Some(target), Some(fields)) = (message.as_object_mut(), data.as_object()) {
                target.extend(fields.clone());
            }
            let envelope = json!({"source": number, "sourceNumber": number, "sourceUuid": uuid,
                "sourceName": name, "sourceDevice": 1, "timestamp": timestamp,
                "serverReceivedTimestamp": timestamp + 20, "serverDeliveredTimestamp": timestamp + 40,
                "dataMessage": message});
            s.queued.push_back(envelope);
            timestamp
        })
    }

    /// `number` writes `text` directly; its timestamp.
    pub fn user_writes(&self, number: &str, uuid: &str, name: &str, text: &str) -> u64 {
        self.user_sends(number, uuid, name, json!({"message": text}))
    }

    /// Signal delivers the envelope of `timestamp` again (a replay after a reconnect).
    pub fn deliver_again(&self, timestamp: u64) -> bool {
        self.with(|s| {
            let found = s
                .delivered
                .iter()
                .find(|e| e["timestamp"] == timestamp)
                .cloned();
            found.map(|e| s.queued.push_back(e)).is_some()
        })
    }

    /// A typing indicator or a delivery receipt, which are not messages.
    pub fn user_types(&self, number: &str, uuid: &str) {
        self.with(|s| {
            s.clock += 1000;
            let envelope = json!({"source": number, "sourceNumber": number, "sourceUuid": uuid,
                "sourceDevice": 1, "timestamp": s.clock,
                "typingMessage": {"action": "STARTED", "timestamp": s.clock}});
            s.queued.push_back(envelope);
        });
    }

    /// The calls answered so far.
    pub fn calls(&self) -> Vec<Call> {
        self.with(|s| s.calls.clone())
    }

    /// Waits (at most `limit`) until `n` calls of `method` were answered; those by then.
    pub fn wait_calls(&self, method: &str, n: usize, limit: Duration) -> Vec<Call> {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut state = lock.lock().unwrap();
        loop {
            let found: Vec<Call> = state
                .calls
                .iter()
                .filter(|c| c.method == method)
                .cloned()
                .collect();
            let left = deadline.saturating_duration_since(Instant::now());
            if found.len() >= n || left.is_zero() {
                return found;
            }
            state = wake.wait_timeout(state, left).unwrap().0;
        }
    }
}

fn serve(stream: TcpStream, shared: &(Mutex<State>, Condvar)) -> std::io::Result<()> {
    let request = HttpRequest::read(&stream)?;
    let mut stream = stream;
    let host = request.header("host").unwrap_or_default();
    let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
    if !matches!(name, "127.0.0.1" | "localhost" | "[::1]") {
        return reply(&mut stream, 421, "text/plain", b"");
    }
    let (path, query) = request
        .path
        .split_once('?')
        .unwrap_or((request.path.as_str(), ""));
    match path {
        "/api/v1/check" if request.method != "GET" => reply(&mut stream, 405, "text/plain", b""),
        "/api/v1/check" => {
            let fails = shared.0.lock().unwrap().check_fails;
            if fails {
                // A daemon that hangs: the connection is dropped unanswered.
                Ok(())
            } else {
                reply(&mut stream, 200, "text/plain", b"")
            }
        }
        "/api/v1/rpc" if request.method != "POST" => reply(&mut stream, 405, "text/plain", b""),
        "/api/v1/rpc" => {
            if !request
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json"))
            {
                return reply(&mut stream, 415, "text/plain", b"");
            }
            let answer = crate::signal_rpc::answer(shared, &request.body);
            shared.1.notify_all();
            reply(
                &mut stream,
                200,
                "application/json",
                answer.to_string().as_bytes(),
            )
        }
        "/api/v1/events" if request.method != "GET" => reply(&mut stream, 405, "text/plain", b""),
        "/api/v1/events" => {
            let account = query
                .split('&')
                .find_map(|p| p.strip_prefix("account="))
                .map(|a| a.replace("%2B", "+"));
            if account.is_some_and(|a| a != shared.0.lock().unwrap().account) {
                return reply(&mut stream, 400, "text/plain", b"");
            }
            events(stream, shared)
        }
        _ => reply(&mut stream, 404, "text/plain", b""),
    }
}

/// The event stream: queued envelopes as they come, keep-alives between them.
fn events(mut stream: TcpStream, shared: &(Mutex<State>, Condvar)) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )?;
    stream.flush()?;
    let (lock, wake) = shared;
    let generation = {
        let mut state = lock.lock().unwrap();
        state.connections += 1;
        state.generation
    };
    let result = (|| -> std::io::Result<()> {
        let mut last_write = Instant::now();
        loop {
            let mut state = lock.lock().unwrap();
            if state.generation != generation {
                // A stream the daemon lost: open, and silent for ever.
                drop(state);
                std::thread::sleep(Duration::from_secs(3600));
                return Ok(());
            }
            let keep_alive = state.keep_alive;
            if !state.silent
                && let Some(envelope) = state.queued.pop_front()
            {
                let data = json!({"account": state.account, "envelope": envelope});
                state.delivered.push(envelope);
                drop(state);
                chunk(&mut stream, &format!("event:receive\ndata:{data}\n\n"))?;
                last_write = Instant::now();
                continue;
            }
            if !state.silent && last_write.elapsed() >= keep_alive {
                drop(state);
                chunk(&mut stream, ":\n")?;
                last_write = Instant::now();
                continue;
            }
            let wait = keep_alive
                .saturating_sub(last_write.elapsed())
                .max(Duration::from_millis(10));
            let _unused = wake.wait_timeout(state, wait).unwrap();
        }
    })();
    lock.lock().unwrap().connections -= 1;
    result
}

fn chunk(stream: &mut TcpStream, text: &str) -> std::io::Result<()> {
    write!(stream, "{:x}\r\n{text}\r\n", text.len())?;
    stream.flush()
}
