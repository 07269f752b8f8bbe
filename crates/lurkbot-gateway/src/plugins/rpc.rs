//! Protocol 1's framing (ARCHITECTURE.md §7d): JSON-RPC 2.0 both ways over a plugin's stdin
//! and stdout, one JSON object a line. [`Peer`] sends requests and notifications and matches
//! the answers; what the plugin asks or tells arrives as [`Incoming`]. A line that is not a
//! JSON-RPC message — a stray `print`, a library's banner — is logged and ignored, never taken
//! for protocol; a line over [`MAX_LINE`] ends the connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// Longest line read from a plugin.
pub(crate) const MAX_LINE: usize = 4 * 1024 * 1024;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RpcError {
    /// No answer within the time allowed.
    Timeout(Duration),
    /// The plugin is gone (exited, or its stdout closed).
    Closed,
    /// The plugin answered with an error object.
    Remote {
        code: i64,
        message: String,
        data: Value,
    },
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout(after) => write!(f, "no answer within {} ms", after.as_millis()),
            Self::Closed => f.write_str("the plugin is not running"),
            Self::Remote { code, message, .. } => write!(f, "{message} (error {code})"),
        }
    }
}

/// What the plugin asks (`id` set: it waits for [`Peer::respond`]) or tells.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) id: Option<Value>,
    pub(crate) method: String,
    pub(crate) params: Value,
}

type Waiting = Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>;

/// One connection to a plugin process.
pub(crate) struct Peer {
    plugin: String,
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    waiting: Arc<Waiting>,
    next: AtomicU64,
    closed: Arc<AtomicBool>,
}

impl Peer {
    /// Speaks over `writer` and `reader` (the plugin's stdin and stdout); what it asks and
    /// tells arrives on the receiver, which ends when its stdout does.
    pub(crate) fn start(
        plugin: &str,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        reader: impl AsyncRead + Send + Unpin + 'static,
    ) -> (Arc<Self>, mpsc::Receiver<Incoming>) {
        let peer = Arc::new(Self {
            plugin: plugin.to_string(),
            writer: tokio::sync::Mutex::new(Box::new(writer)),
            waiting: Arc::default(),
            next: AtomicU64::new(1),
            closed: Arc::default(),
        });
        let (tx, rx) = mpsc::channel(256);
        let (waiting, closed, name) = (
            peer.waiting.clone(),
            peer.closed.clone(),
            plugin.to_string(),
        );
        tokio::spawn(async move {
            read_lines(&name, reader, &waiting, &tx).await;
            closed.store(true, Ordering::SeqCst);
            if let Ok(mut waiting) = waiting.lock() {
                for (_, answer) in waiting.drain() {
                    let _ = answer.send(Err(RpcError::Closed));
                }
            }
        });
        (peer, rx)
    }

    /// Whether the plugin's stdout has closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Asks `method` with `params`; its result within `limit`.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, RpcError> {
        if self.is_closed() {
            return Err(RpcError::Closed);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(id, tx);
        }
        let sent = self
            .write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = match sent {
            Ok(()) => tokio::time::timeout(limit, rx).await,
            Err(()) => Ok(Ok(Err(RpcError::Closed))),
        };
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.remove(&id);
        }
        match answer {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(RpcError::Closed),
            Err(_) => Err(RpcError::Timeout(limit)),
        }
    }

    /// Tells `method` with `params` (no answer).
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        let _ = self
            .write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Answers the plugin's request `id`: a result, or an error `(code, message)`.
    pub(crate) async fn respond(&self, id: Value, answer: Result<Value, (i64, String)>) {
        let message = match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        let _ = self.write(&message).await;
    }

    /// Closes the plugin's stdin (after `shutdown`).
    pub(crate) async fn close(&self) {
        let _ = self.writer.lock().await.shutdown().await;
    }

    async fn write(&self, message: &Value) -> Result<(), ()> {
        let mut line = message.to_string();
        line.push('\n');
        let mut writer = self.writer.lock().await;
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await
        };
        written.await.map_err(|e| {
            tracing::debug!(plugin = self.plugin.as_str(), error = %e, "plugin stdin closed");
        })
    }
}

/// Reads the plugin's lines until its stdout ends: answers go to their waiting requests,
/// requests and notifications to `tx`, anything else to the log.
async fn read_lines(
    plugin: &str,
    reader: impl AsyncRead + Send + Unpin,
    waiting: &Waiting,
    tx: &mpsc::Sender<Incoming>,
) {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) if line.len() > MAX_LINE => {
                tracing::warn!(
                    plugin,
                    "a plugin wrote a line over 4 MiB: its connection is ended"
                );
                return;
            }
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let message = serde_json::from_str::<Value>(text)
            .ok()
            .filter(|m| m["jsonrpc"] == "2.0");
        let Some(message) = message else {
            let shown: String = text.chars().take(200).collect();
            tracing::warn!(
                plugin,
                line = shown.as_str(),
                "a plugin wrote what is not protocol: ignored"
            );
            continue;
        };
        if let Some(method) = message["method"].as_str() {
            let incoming = Incoming {
                id: message.get("id").cloned().filter(|id| !id.is_null()),
                method: method.to_string(),
                params: message.get("params").cloned().unwrap_or(Value::Null),
            };
            if tx.send(incoming).await.is_err() {
                return;
            }
            continue;
        }
        let Some(id) = message["id"].as_u64() else {
            tracing::warn!(plugin, "a plugin answered without an id we asked: ignored");
            continue;
        };
        let answer = match message.get("error") {
            Some(error) => Err(RpcError::Remote {
                code: error["code"].as_i64().unwrap_or(-32000),
                message: error["message"].as_str().unwrap_or("error").to_string(),
                data: error.get("data").cloned().unwrap_or(Value::Null),
            }),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let sender = waiting.lock().ok().and_then(|mut w| w.remove(&id));
        if let Some(sender) = sender {
            let _ = sender.send(answer);
        }
    }
}
