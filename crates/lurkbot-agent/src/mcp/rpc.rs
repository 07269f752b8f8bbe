//! The client side of MCP's JSON-RPC (specification 2025-06-18, which SDKs of 2024-11-05 and
//! 2025-03-26 also accept): one [`Connection`] to a server over stdio (a child process, one
//! JSON message per line each way) or streamable HTTP (each message POSTed; the answer is JSON
//! or an SSE stream; `Mcp-Session-Id` kept from the initialize answer). It does what LurkBot
//! needs of a server — the handshake, `tools/list` with its pages, `tools/call` — answers the
//! server's `ping` and refuses its other requests (LurkBot offers no sampling, roots or
//! elicitation). Lines and bodies over [`MAX_MESSAGE`] end the connection.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;

/// The protocol version LurkBot asks for (and serves).
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";
/// Versions LurkBot speaks, newest first.
pub(crate) const SUPPORTED_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];
/// Largest message read from a server.
pub(crate) const MAX_MESSAGE: usize = 16 * 1024 * 1024;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// A connection to one server.
pub(crate) struct Connection {
    transport: Transport,
    next_id: AtomicU64,
}

enum Transport {
    Stdio {
        stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
        pending: Pending,
        closed: Arc<AtomicBool>,
        child: Mutex<Option<Child>>,
    },
    Http {
        client: reqwest::Client,
        url: String,
        session: Mutex<Option<String>>,
        version: Mutex<Option<String>>,
    },
}

/// The text of a JSON-RPC error object.
fn error_text(error: &Value) -> String {
    let message = error["message"].as_str().unwrap_or("error");
    match error["code"].as_i64() {
        Some(code) => format!("{message} (JSON-RPC error {code})"),
        None => message.to_string(),
    }
}

/// A response's result, or its error as text.
fn outcome(message: &Value) -> Result<Value, String> {
    match message.get("error") {
        Some(error) => Err(error_text(error)),
        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
    }
}

async fn write_line(stdin: &tokio::sync::Mutex<ChildStdin>, message: &Value) -> Result<(), String> {
    let mut line = message.to_string();
    line.push('\n');
    let mut stdin = stdin.lock().await;
    stdin
        .write_all(line.as_bytes())
        .await
        .map_err(|e| format!("cannot write to the server: {e}"))?;
    stdin
        .flush()
        .await
        .map_err(|e| format!("cannot write to the server: {e}"))
}

/// The answer to a server's request: `ping` is answered, anything else refused.
fn answer_to(request: &Value) -> Value {
    let id = request["id"].clone();
    if request["method"] == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32601,
            "message": format!("LurkBot does not offer '{}'", request["method"].as_str().unwrap_or(""))
        }})
    }
}

/// Reads the child's stdout: answers go to their callers, the server's requests are answered;
/// at the end every caller still waiting gets an error.
async fn read_stdout(
    stdout: tokio::process::ChildStdout,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    pending: Pending,
    closed: Arc<AtomicBool>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_MESSAGE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) if n > MAX_MESSAGE => break,
            Ok(_) => {}
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if message.get("method").is_some() {
            if message.get("id").is_some()
                && write_line(&stdin, &answer_to(&message)).await.is_err()
            {
                break;
            }
            continue;
        }
        let Some(id) = message["id"].as_u64() else {
            continue;
        };
        let waiting = pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(tx) = waiting {
            let _ = tx.send(outcome(&message));
        }
    }
    closed.store(true, Ordering::SeqCst);
    if let Ok(mut waiting) = pending.lock() {
        for (_, tx) in waiting.drain() {
            let _ = tx.send(Err("the server closed the connection".into()));
        }
    }
}

/// The JSON-RPC answer to request `id` in an SSE body (`data:` lines, events split by a blank
/// line); the server's own requests and notifications in the stream are skipped.
fn answer_in_sse(body: &str, id: u64) -> Option<Value> {
    body.split("\n\n")
        .flat_map(|event| event.split("\r\n\r\n"))
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            serde_json::from_str::<Value>(&data.join("\n")).ok()
        })
        .find(|m| m["id"].as_u64() == Some(id) && m.get("method").is_none())
}

impl Connection {
    /// Starts `command` (stdin and stdout piped; `stderr` set by the caller) and speaks over it.
    ///
    /// # Errors
    /// The program cannot be started.
    pub(crate) fn spawn(
        mut command: tokio::process::Command,
    ) -> std::io::Result<(Self, Option<tokio::process::ChildStderr>)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("no pipes to the child"));
        };
        let stderr = child.stderr.take();
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        tokio::spawn(read_stdout(
            stdout,
            stdin.clone(),
            pending.clone(),
            closed.clone(),
        ));
        let transport = Transport::Stdio {
            stdin,
            pending,
            closed,
            child: Mutex::new(Some(child)),
        };
        Ok((
            Self {
                transport,
                next_id: AtomicU64::new(1),
            },
            stderr,
        ))
    }

    /// Speaks streamable HTTP to `url`.
    ///
    /// # Errors
    /// The HTTP client cannot be made.
    pub(crate) fn http(url: &str) -> Result<Self, String> {
        let client = lurkbot_term::http_client_builder()
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Self {
            transport: Transport::Http {
                client,
                url: url.to_string(),
                session: Mutex::new(None),
                version: Mutex::new(None),
            },
            next_id: AtomicU64::new(1),
        })
    }

    /// Whether the server went away (a stdio child that closed its output).
    pub(crate) fn is_closed(&self) -> bool {
        match &self.transport {
            Transport::Stdio { closed, .. } => closed.load(Ordering::SeqCst),
            Transport::Http { .. } => false,
        }
    }

    /// The handshake: `initialize`, then `notifications/initialized`.
    ///
    /// # Errors
    /// The server refusing or not answering.
    pub(crate) async fn initialize(&self) -> Result<Value, String> {
        let result = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "lurkbot", "version": env!("CARGO_PKG_VERSION")}
                }),
            )
            .await?;
        let version = result["protocolVersion"].as_str().unwrap_or_default();
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(format!(
                "speaks MCP protocol '{version}'; LurkBot speaks {}",
                SUPPORTED_VERSIONS.join(", ")
            ));
        }
        if let Transport::Http { version: v, .. } = &self.transport
            && let Ok(mut v) = v.lock()
        {
            *v = Some(version.to_string());
        }
        self.notify("notifications/initialized", json!({})).await?;
        Ok(result)
    }

    /// Every tool, following `nextCursor` (at most 100 pages).
    ///
    /// # Errors
    /// The server failing.
    pub(crate) async fn list_tools(&self) -> Result<Vec<Value>, String> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params).await?;
            tools.extend(page["tools"].as_array().cloned().unwrap_or_default());
            match page["nextCursor"].as_str() {
                Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
                _ => break,
            }
        }
        Ok(tools)
    }

    /// `tools/call`: the result object (`content`, `structuredContent`, `isError`).
    ///
    /// # Errors
    /// The server failing (a tool's own failure is a result with `isError`).
    pub(crate) async fn call_tool(&self, name: &str, arguments: &Value) -> Result<Value, String> {
        let arguments = match arguments {
            Value::Object(_) => arguments.clone(),
            _ => json!({}),
        };
        let mut params = json!({"name": name, "arguments": arguments});
        // The tool call's trace goes with it, where MCP carries request metadata
        // (ARCHITECTURE.md §6.4).
        if let Some(context) = lurkbot_core::trace::current() {
            params["_meta"] = json!({"traceparent": context.header()});
        }
        self.request("tools/call", params).await
    }

    /// Sends a request and waits for its answer.
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match &self.transport {
            Transport::Stdio {
                stdin,
                pending,
                closed,
                ..
            } => {
                if closed.load(Ordering::SeqCst) {
                    return Err("the server closed the connection".into());
                }
                let (tx, rx) = oneshot::channel();
                if let Ok(mut p) = pending.lock() {
                    p.insert(id, tx);
                }
                if let Err(e) = write_line(stdin, &message).await {
                    if let Ok(mut p) = pending.lock() {
                        p.remove(&id);
                    }
                    return Err(e);
                }
                rx.await
                    .unwrap_or_else(|_| Err("the server closed the connection".into()))
            }
            Transport::Http { .. } => self.post(&message, Some(id)).await,
        }
    }

    /// Sends a notification (no answer).
    async fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        match &self.transport {
            Transport::Stdio { stdin, .. } => write_line(stdin, &message).await,
            Transport::Http { .. } => self.post(&message, None).await.map(drop),
        }
    }

    /// POSTs one message; for a request (`id`), its answer from the JSON or SSE body.
    async fn post(&self, message: &Value, id: Option<u64>) -> Result<Value, String> {
        let Transport::Http {
            client,
            url,
            session,
            version,
        } = &self.transport
        else {
            return Err("not an HTTP connection".into());
        };
        let mut request = client
            .post(url.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(s) = session.lock().ok().and_then(|s| s.clone()) {
            request = request.header("mcp-session-id", s);
        }
        if let Some(v) = version.lock().ok().and_then(|v| v.clone()) {
            request = request.header("mcp-protocol-version", v);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        if let Some(s) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            && let Ok(mut kept) = session.lock()
        {
            *kept = Some(s.to_string());
        }
        let status = response.status();
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| e.without_url().to_string())?
        {
            if body.len() + chunk.len() > MAX_MESSAGE {
                return Err(format!("answered with more than {MAX_MESSAGE} bytes"));
            }
            body.extend_from_slice(&chunk);
            // An SSE stream may stay open after the answer: stop once it has arrived (looked
            // for only when this chunk ends an event, not on every chunk).
            if sse
                && let Some(id) = id
                && chunk.windows(2).any(|w| w == b"\n\n" || w == b"\r\n")
                && answer_in_sse(&String::from_utf8_lossy(&body), id).is_some()
            {
                break;
            }
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Err(format!("HTTP {status}: {}", text.trim()));
        }
        let Some(id) = id else {
            return Ok(Value::Null);
        };
        let text = String::from_utf8_lossy(&body);
        let answer = if sse {
            answer_in_sse(&text, id)
        } else {
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Array(batch)) => batch.into_iter().find(|m| m["id"].as_u64() == Some(id)),
                Ok(single) => Some(single),
                Err(_) => None,
            }
        };
        answer
            .as_ref()
            .map(outcome)
            .unwrap_or_else(|| Err(format!("no answer to request {id} in the response")))
    }

    /// Ends the connection: a child's input is closed and the child killed; an HTTP session
    /// is ended with DELETE.
    pub(crate) async fn close(&self) {
        match &self.transport {
            Transport::Stdio { stdin, child, .. } => {
                let _ = stdin.lock().await.shutdown().await;
                let child = child.lock().ok().and_then(|mut c| c.take());
                if let Some(mut child) = child {
                    let _ = child.kill().await;
                }
            }
            Transport::Http {
                client,
                url,
                session,
                ..
            } => {
                let id = session.lock().ok().and_then(|s| s.clone());
                if let Some(id) = id {
                    let _ = client
                        .delete(url.as_str())
                        .header("mcp-session-id", id)
                        .send()
                        .await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_found_in_an_sse_stream_among_other_messages() {
        let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                    event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n\n\
                    event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n\n";
        let answer = answer_in_sse(body, 7).unwrap_or_default();
        assert_eq!(outcome(&answer), Ok(json!({"ok": true})));
        assert!(answer_in_sse(body, 8).is_none());
        let refused =
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}});
        assert_eq!(
            outcome(&refused),
            Err("bad (JSON-RPC error -32602)".to_string())
        );
        assert_eq!(
            answer_to(&json!({"id": 3, "method": "sampling/createMessage"}))["error"]["code"],
            -32601
        );
        assert_eq!(
            answer_to(&json!({"id": 4, "method": "ping"}))["result"],
            json!({})
        );
    }
}
