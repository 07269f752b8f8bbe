//! A scripted model server for tests and benchmarks (feature `fake`): real HTTP on loopback,
//! real SSE in the OpenAI Chat Completions and Anthropic Messages wire formats, answering each
//! request with the next scripted step. It records every request (path, key, JSON body) so tests
//! can check what was sent. This is the only fake in LurkBot's tests: no model with tool calls
//! runs here.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// A streamed reply: text pieces, then tool calls `(id, name, arguments JSON)`.
    Reply {
        /// Text, streamed piece by piece.
        text: Vec<String>,
        /// Tool calls.
        calls: Vec<(String, String, String)>,
    },
    /// An HTTP error with a JSON body in the wire format's shape.
    Error {
        /// Status.
        status: u16,
        /// `error.message`.
        message: String,
    },
    /// Streams some text, then drops the connection.
    CutOff(String),
    /// Streams some text, then keeps the connection open without another byte (a model
    /// that hangs; for crash and cancellation tests).
    Stall(String),
    /// Holds the call open until the test opens the gate, then answers with the step inside
    /// (a model call in flight at a moment the test chooses).
    Held(Gate, Box<Step>),
}

/// A gate a [`Step::Held`] call waits at.
#[derive(Debug, Clone, Default)]
pub struct Gate(std::sync::Arc<GateInner>);

#[derive(Debug, Default)]
struct GateInner {
    open: std::sync::atomic::AtomicBool,
    opened: tokio::sync::Notify,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens it: every call held at it goes on.
    pub fn open(&self) {
        self.0.open.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.opened.notify_waiters();
    }

    async fn wait(&self) {
        loop {
            let opened = self.0.opened.notified();
            if self.0.open.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            opened.await;
        }
    }
}

impl Step {
    /// A plain text reply streamed word by word (each piece keeps its trailing space).
    pub fn text(reply: &str) -> Self {
        let pieces = reply.split_inclusive(' ').map(str::to_string).collect();
        Self::Reply {
            text: pieces,
            calls: Vec::new(),
        }
    }

    /// A reply that calls one tool.
    pub fn call(id: &str, name: &str, arguments: Value) -> Self {
        Self::calls(&[(id, name, arguments)])
    }

    /// A reply that calls several tools at once.
    pub fn calls(calls: &[(&str, &str, Value)]) -> Self {
        Self::Reply {
            text: Vec::new(),
            calls: calls
                .iter()
                .map(|(id, name, args)| (id.to_string(), name.to_string(), args.to_string()))
                .collect(),
        }
    }
}

/// A recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Path (`/v1/chat/completions`, `/v1/messages`).
    pub path: String,
    /// The key sent (`Authorization: Bearer` or `x-api-key`).
    pub key: Option<String>,
    /// The JSON body.
    pub body: Value,
    /// The W3C `traceparent` header, if sent.
    pub traceparent: Option<String>,
}

/// Scripts served only to requests whose body contains a marker (e.g. a session key), so
/// sessions that call the model at the same time each get their own answers in order.
type Routes = Arc<Mutex<Vec<(String, VecDeque<Step>)>>>;

/// Answers computed from the request body, for requests no script step is left for (long
/// benchmarks that cannot script every step in order).
pub type Responder = Arc<dyn Fn(&Value) -> Step + Send + Sync>;

/// What a connection needs besides the stream.
#[derive(Clone)]
struct Shared {
    script: Arc<Mutex<VecDeque<Step>>>,
    routes: Routes,
    requests: Arc<Mutex<Vec<Recorded>>>,
    responder: Arc<Mutex<Option<Responder>>>,
    record: Arc<std::sync::atomic::AtomicBool>,
}

/// The running server.
pub struct FakeProvider {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Shared,
}

impl FakeProvider {
    /// Starts a server on an ephemeral loopback port.
    ///
    /// # Panics
    /// When no loopback port can be bound (tests only).
    pub async fn start(steps: Vec<Step>) -> Self {
        #[allow(clippy::expect_used)]
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        #[allow(clippy::expect_used)]
        let addr = listener.local_addr().expect("local address");
        let shared = Shared {
            script: Arc::new(Mutex::new(VecDeque::from(steps))),
            routes: Arc::default(),
            requests: Arc::default(),
            responder: Arc::default(),
            record: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        };
        let accepted = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = accepted.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, shared).await;
                });
            }
        });
        Self {
            url: format!("http://{addr}"),
            shared,
        }
    }

    /// Answers requests that no route or script step is left for with `responder(body)`.
    pub fn respond(&self, responder: impl Fn(&Value) -> Step + Send + Sync + 'static) {
        if let Ok(mut slot) = self.shared.responder.lock() {
            *slot = Some(Arc::new(responder));
        }
    }

    /// Stops (or resumes) recording requests: a long benchmark keeps no history.
    pub fn record(&self, on: bool) {
        self.shared
            .record
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Serves `steps`, in order, to the requests whose JSON body contains `marker` (before
    /// the shared script); a request matching no route takes the shared script's next step.
    pub fn route(&self, marker: &str, steps: Vec<Step>) {
        if let Ok(mut routes) = self.shared.routes.lock() {
            match routes.iter_mut().find(|(m, _)| m == marker) {
                Some((_, queue)) => queue.extend(steps),
                None => routes.push((marker.to_string(), VecDeque::from(steps))),
            }
        }
    }

    /// Adds steps to the end of the script.
    pub fn push(&self, steps: Vec<Step>) {
        if let Ok(mut script) = self.shared.script.lock() {
            script.extend(steps);
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Steps not used yet.
    pub fn remaining(&self) -> usize {
        self.shared
            .script
            .lock()
            .map(|s| s.len())
            .unwrap_or_default()
    }
}

/// A `200` with a JSON body, and the connection closed.
async fn write_json(stream: &mut TcpStream, answer: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        answer.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(answer.as_bytes()).await?;
    stream.flush().await
}

async fn serve(mut stream: TcpStream, shared: Shared) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let path = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or_default();
    while buf.len() < header_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&buf[header_end..]).unwrap_or(Value::Null);
    let key = header("authorization")
        .map(|v| v.trim_start_matches("Bearer ").to_string())
        .or_else(|| header("x-api-key"));
    if shared.record.load(std::sync::atomic::Ordering::Relaxed)
        && let Ok(mut r) = shared.requests.lock()
    {
        r.push(Recorded {
            path: path.clone(),
            key,
            body: body.clone(),
            traceparent: header("traceparent"),
        });
    }
    if path.ends_with("/models") {
        // The model list every OpenAI-compatible server serves (`GET /v1/models`).
        let answer = serde_json::json!({"object": "list", "data": [
            {"id": "fake-model", "object": "model", "owned_by": "lurkbot-fake"}
        ]})
        .to_string();
        return write_json(&mut stream, &answer).await;
    }
    if path.ends_with("/embeddings") {
        return write_json(&mut stream, &embeddings_answer(&body).to_string()).await;
    }
    let routed = shared.routes.lock().ok().and_then(|mut routes| {
        if routes.is_empty() {
            return None;
        }
        // Only routed scripts need the body as text (long benchmarks send large bodies).
        let text = body.to_string();
        routes
            .iter_mut()
            .find(|(marker, queue)| !queue.is_empty() && text.contains(marker.as_str()))
            .and_then(|(_, queue)| queue.pop_front())
    });
    let step = routed
        .or_else(|| shared.script.lock().ok().and_then(|mut s| s.pop_front()))
        .or_else(|| {
            let responder = shared.responder.lock().ok()?.clone()?;
            Some(responder(&body))
        });
    let anthropic = path.ends_with("/messages");
    let step = step.unwrap_or(Step::Error {
        status: 500,
        message: "the fake provider's script is exhausted".into(),
    });
    let mut step = step;
    while let Step::Held(gate, inner) = step {
        gate.wait().await;
        step = *inner;
    }
    match step {
        // Let go by the loop above.
        Step::Held(..) => {}
        Step::Error { status, message } => {
            let body = if anthropic {
                json!({"type": "error", "error": {"type": "api_error", "message": message}})
            } else {
                json!({"error": {"message": message, "type": "error"}})
            };
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
        Step::CutOff(text) => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let events = if anthropic {
                anthropic_events(&[text], &[], false)
            } else {
                openai_events(&[text], &[], false)
            };
            stream.write_all(events.as_bytes()).await?;
        }
        Step::Stall(text) => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let events = if anthropic {
                anthropic_events(&[text], &[], false)
            } else {
                openai_events(&[text], &[], false)
            };
            stream.write_all(events.as_bytes()).await?;
            stream.flush().await?;
            std::future::pending::<()>().await;
        }
        Step::Reply { text, calls } => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let events = if anthropic {
                anthropic_events(&text, &calls, true)
            } else {
                openai_events(&text, &calls, true)
            };
            for piece in events.split_inclusive("\n\n") {
                stream.write_all(piece.as_bytes()).await?;
                stream.flush().await?;
            }
        }
    }
    stream.shutdown().await
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

fn openai_events(text: &[String], calls: &[(String, String, String)], complete: bool) -> String {
    let mut out = String::new();
    let mut push = |v: Value| out.push_str(&format!("data: {v}\n\n"));
    for piece in text {
        push(
            json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}),
        );
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let (a, b) = args.split_at(args.len() / 2);
        push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": a}}]}}]}));
        push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "function": {"arguments": b}}]}}]}));
    }
    if complete {
        let reason = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}));
        let output: usize = text.iter().map(|t| t.len() / 4 + 1).sum();
        push(json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": output}}));
        out.push_str("data: [DONE]\n\n");
    }
    out
}

fn anthropic_events(text: &[String], calls: &[(String, String, String)], complete: bool) -> String {
    let mut out = String::new();
    let mut push = |v: Value| {
        out.push_str(&format!(
            "event: {}\ndata: {v}\n\n",
            v["type"].as_str().unwrap_or_default()
        ))
    };
    push(
        json!({"type": "message_start", "message": {"id": "msg_fake", "role": "assistant", "content": [], "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    let mut index = 0;
    if !text.is_empty() {
        push(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        );
        for piece in text {
            push(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        push(json!({"type": "content_block_stop", "index": 0}));
        index = 1;
    }
    for (id, name, args) in calls {
        push(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        let (a, b) = args.split_at(args.len() / 2);
        for part in [a, b] {
            push(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
            );
        }
        push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if complete {
        let reason = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        let output: usize = text.iter().map(|t| t.len() / 4 + 1).sum();
        push(
            json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": output}}),
        );
        push(json!({"type": "message_stop"}));
    }
    out
}

/// Dimensions of the fake embeddings.
pub const FAKE_EMBEDDING_DIMS: usize = 64;

/// The fake `/embeddings` answer: each input's lower-cased words hashed into
/// [`FAKE_EMBEDDING_DIMS`] buckets and normalised, so equal words give near vectors and the
/// vectors are the same on every run (embeddings never take a step of the script).
fn embeddings_answer(body: &Value) -> Value {
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": fake_embedding(text)}))
        .collect();
    json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 0, "total_tokens": 0}})
}

/// The fake embedding of one text: its lower-cased words hashed into [`FAKE_EMBEDDING_DIMS`]
/// buckets, normalised.
pub fn fake_embedding(text: &str) -> Vec<f32> {
    let mut vector = vec![0f32; FAKE_EMBEDDING_DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        vector[(hash % FAKE_EMBEDDING_DIMS as u64) as usize] += 1.0;
    }
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|v| *v /= norm);
    }
    vector
}
