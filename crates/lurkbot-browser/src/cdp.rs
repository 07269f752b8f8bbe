//! The DevTools protocol over Chromium's `--remote-debugging-pipe`: JSON messages separated by
//! NUL bytes, written to the child's fd 3 and read from its fd 4. No port is opened, so no other
//! process on the machine can drive this browser. Commands are matched to answers by id;
//! events go to every subscriber. When Chromium exits the pipe reaches end of file, every
//! waiting command fails with [`BrowserError::Closed`] and [`Cdp::is_alive`] turns false.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::{BrowserError, lock};

/// Largest message read from Chromium (a full-page screenshot is the biggest).
const MAX_MESSAGE: usize = 96 * 1024 * 1024;

/// One event from Chromium.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// `Domain.event`.
    pub(crate) method: String,
    /// The target session it came from (flattened sessions).
    pub(crate) session: Option<String>,
    /// Its parameters.
    pub(crate) params: Value,
}

/// Anything Chromium writes: an answer (with `id`) or an event.
#[derive(Deserialize)]
struct Incoming {
    id: Option<u64>,
    result: Option<Value>,
    error: Option<WireError>,
    method: Option<String>,
    #[serde(rename = "sessionId")]
    session: Option<String>,
    #[serde(default)]
    params: Value,
}

#[derive(Deserialize)]
struct WireError {
    message: String,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// Where paused requests go (`Fetch.requestPaused`): a channel of their own, never the shared
/// broadcast, so that none is ever lost to a slow subscriber — a lost one would hang its page.
type Paused = Arc<Mutex<Option<mpsc::UnboundedSender<Event>>>>;

/// A DevTools connection.
pub(crate) struct Cdp {
    writer: Mutex<std::fs::File>,
    next_id: AtomicU64,
    pending: Pending,
    events: broadcast::Sender<Event>,
    paused: Paused,
    alive: Arc<AtomicBool>,
}

impl Cdp {
    /// Talks to Chromium over `to_browser` (its fd 3) and `from_browser` (its fd 4).
    pub(crate) fn new(to_browser: std::fs::File, from_browser: std::fs::File) -> Arc<Self> {
        let (events, _) = broadcast::channel(1024);
        let cdp = Arc::new(Self {
            writer: Mutex::new(to_browser),
            next_id: AtomicU64::new(1),
            pending: Arc::default(),
            events: events.clone(),
            paused: Arc::default(),
            alive: Arc::new(AtomicBool::new(true)),
        });
        let pending = Arc::clone(&cdp.pending);
        let paused = Arc::clone(&cdp.paused);
        let alive = Arc::clone(&cdp.alive);
        let spawned = std::thread::Builder::new()
            .name("lurkbot-cdp".into())
            .spawn(move || read_loop(from_browser, &pending, &events, &paused, &alive));
        if spawned.is_err() {
            cdp.alive.store(false, Ordering::SeqCst);
        }
        cdp
    }

    /// Whether Chromium is still connected.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Every paused request (`Fetch.requestPaused`) from now on, and only those.
    pub(crate) fn paused_requests(&self) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        *lock(&self.paused) = Some(tx);
        rx
    }

    /// Every event from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Sends `method` (to the target `session`, or the browser) and waits for its answer.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, BrowserError> {
        if !self.is_alive() {
            return Err(BrowserError::Closed("the DevTools pipe is closed".into()));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let mut bytes = serde_json::to_vec(&message)
            .map_err(|e| BrowserError::InvalidArgs(format!("{method}: {e}")))?;
        bytes.push(0);
        let written = lock(&self.writer).write_all(&bytes);
        if let Err(e) = written {
            lock(&self.pending).remove(&id);
            self.alive.store(false, Ordering::SeqCst);
            return Err(BrowserError::Closed(e.to_string()));
        }
        match tokio::time::timeout(timeout, rx).await {
            Err(_) => {
                lock(&self.pending).remove(&id);
                Err(BrowserError::Timeout(method.to_string()))
            }
            Ok(Err(_)) => Err(BrowserError::Closed("Chromium exited".into())),
            Ok(Ok(Err(message))) => Err(BrowserError::Protocol {
                method: method.to_string(),
                message,
            }),
            Ok(Ok(Ok(result))) => Ok(result),
        }
    }

    /// [`Cdp::call`] with the answer read as `T`.
    pub(crate) async fn call_as<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<T, BrowserError> {
        let value = self.call(method, params, session, timeout).await?;
        serde_json::from_value(value).map_err(|e| BrowserError::Protocol {
            method: method.to_string(),
            message: format!("unexpected answer: {e}"),
        })
    }
}

fn read_loop(
    from_browser: std::fs::File,
    pending: &Pending,
    events: &broadcast::Sender<Event>,
    paused: &Paused,
    alive: &AtomicBool,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, from_browser);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_MESSAGE as u64)
            .read_until(0, &mut buf);
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) if buf.last() != Some(&0) => {
                tracing::warn!("a DevTools message over {MAX_MESSAGE} bytes; closing");
                break;
            }
            Ok(_) => {}
        }
        buf.pop();
        let Ok(incoming) = serde_json::from_slice::<Incoming>(&buf) else {
            continue;
        };
        match incoming.id {
            Some(id) => {
                if let Some(tx) = lock(pending).remove(&id) {
                    let answer = match incoming.error {
                        Some(e) => Err(e.message),
                        None => Ok(incoming.result.unwrap_or(Value::Null)),
                    };
                    let _ = tx.send(answer);
                }
            }
            None => {
                if let Some(method) = incoming.method {
                    let event = Event {
                        method,
                        session: incoming.session,
                        params: incoming.params,
                    };
                    if event.method == "Fetch.requestPaused"
                        && let Some(tx) = lock(paused).as_ref()
                    {
                        let _ = tx.send(event);
                        continue;
                    }
                    let _ = events.send(event);
                }
            }
        }
    }
    alive.store(false, Ordering::SeqCst);
    // Dropping the senders fails every waiting command and ends the interceptor.
    lock(pending).clear();
    lock(paused).take();
}
