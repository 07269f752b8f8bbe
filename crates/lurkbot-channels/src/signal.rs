//! Signal through signal-cli's HTTP daemon (ARCHITECTURE.md §6.1.1): libsignal is never linked
//! in; signal-cli (a separate program, run by the owner with `daemon --http`, or by LurkBot:
//! [`crate::signal_daemon`]) speaks to Signal. Messages arrive on `GET /api/v1/events` (server-
//! sent events; `signal_events.rs`), replies, typing and read receipts go out through JSON-RPC
//! on `POST /api/v1/rpc`.
//!
//! Liveness (§6.1.2): signal-cli writes a keep-alive comment on the stream every 15 s; a stream
//! silent for [`SILENCE`] is taken for dead — the channel says `stale`, drops it and connects
//! again — and a daemon that cannot be reached keeps it stale, so the owner is told when it
//! lasts. A message is identified by its author and timestamp: one Signal delivers again is
//! answered once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::http::{classify, client, network};
use crate::signal_daemon::SignalDaemon;
use crate::signal_events::{Own, inbound_of, parse_stream};
use crate::signal_text::signal_text;
use crate::{BoxFuture, Channel, ChannelError, Inbound, Picture, VoiceNote};

/// How long the event stream may say nothing (signal-cli's keep-alive comes every 15 s).
pub const SILENCE: Duration = Duration::from_secs(45);
/// The longest text sent as one message (Signal's apps show longer ones as a file).
pub const MAX_CHARS: usize = 2000;

/// The open event stream and what is left of its last bytes.
struct Open {
    response: reqwest::Response,
    buffer: Vec<u8>,
    data: Vec<String>,
    /// Nothing read from it yet: its first sign of life is reported (the status says
    /// `connected` before the first message).
    fresh: bool,
}

/// JSON-RPC calls to one account of the daemon (cloned into the tasks that send receipts).
#[derive(Clone)]
struct Rpc {
    http: reqwest::Client,
    base: String,
    account: String,
    next_id: std::sync::Arc<AtomicU64>,
}

impl Rpc {
    /// One call; its `result`.
    async fn call(&self, method: &str, mut params: Value) -> Result<Value, ChannelError> {
        params["account"] = json!(self.account);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self
            .http
            .post(format!("{}/api/v1/rpc", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| network("signal-cli", e))?;
        let status = response.status().as_u16();
        let answer: Value = response
            .bytes()
            .await
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        if status != 200 {
            return Err(classify(status, "signal-cli refused the call", None));
        }
        match answer.get("error") {
            None => Ok(answer["result"].clone()),
            Some(error) => Err(refused(
                error["code"].as_i64().unwrap_or(0),
                error["message"].as_str().unwrap_or("refused"),
                &self.account,
            )),
        }
    }
}

/// Signal on one account of a signal-cli daemon.
pub struct Signal {
    rpc: Rpc,
    events: reqwest::Client,
    base: String,
    account: String,
    daemon: Option<SignalDaemon>,
    silence: Duration,
    stream: tokio::sync::Mutex<Option<Open>>,
    own: Mutex<Own>,
    stale: crate::stale::Stale,
    received: Mutex<Vec<Inbound>>,
}

impl Signal {
    /// The account `account` (`+15550001111`) of the daemon at `base_url`.
    ///
    /// # Errors
    /// The HTTP clients cannot be built.
    pub fn new(base_url: &str, account: &str) -> Result<Self, ChannelError> {
        let base = base_url.trim_end_matches('/').to_string();
        Ok(Self {
            rpc: Rpc {
                http: client(Duration::from_secs(60))?,
                base: base.clone(),
                account: account.to_string(),
                next_id: std::sync::Arc::new(AtomicU64::new(1)),
            },
            events: client(SILENCE + Duration::from_secs(5))?,
            base,
            account: account.to_string(),
            daemon: None,
            silence: SILENCE,
            stream: tokio::sync::Mutex::new(None),
            own: Mutex::new(Own {
                number: account.to_string(),
                uuid: None,
            }),
            stale: crate::stale::Stale::default(),
            received: Mutex::new(Vec::new()),
        })
    }

    /// The account on a daemon LurkBot starts and supervises itself.
    ///
    /// # Errors
    /// The HTTP clients cannot be built.
    pub fn supervised(daemon: SignalDaemon) -> Result<Self, ChannelError> {
        let mut signal = Self::new(&daemon.base_url(), daemon.account())?;
        signal.daemon = Some(daemon);
        Ok(signal)
    }

    /// Takes a stream silent for `silence` for dead (tests shorten [`SILENCE`]).
    #[must_use]
    pub fn with_silence(mut self, silence: Duration) -> Self {
        self.silence = silence;
        self
    }

    fn set_stale(&self, why: Option<String>) {
        self.stale.set(why);
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, ChannelError> {
        self.rpc.call(method, params).await
    }

    /// Opens the event stream (starting the daemon first when LurkBot runs it).
    async fn open(&self) -> Result<Open, ChannelError> {
        if let Some(daemon) = &self.daemon {
            daemon.ensure().await?;
        }
        let account = self.account.replace('+', "%2B");
        let sent = self
            .events
            .get(format!("{}/api/v1/events?account={account}", self.base))
            .send()
            .await;
        let response = match sent {
            Ok(r) if r.status().is_success() => r,
            Ok(r) if r.status().as_u16() == 400 => {
                return Err(ChannelError::Permanent(format!(
                    "signal-cli does not know the account {}: link or register it (`lurkbot channels login signal` says how)",
                    self.account
                )));
            }
            Ok(r) => {
                return Err(classify(
                    r.status().as_u16(),
                    "signal-cli's event stream",
                    None,
                ));
            }
            Err(e) => return Err(network("signal-cli", e)),
        };
        self.learn_own_uuid().await;
        Ok(Open {
            response,
            buffer: Vec::new(),
            data: Vec::new(),
            fresh: true,
        })
    }

    /// The account's ACI, which a mention may carry instead of its number (asked once).
    async fn learn_own_uuid(&self) {
        if self.own.lock().is_ok_and(|o| o.uuid.is_some()) {
            return;
        }
        let asked = self
            .call("getUserStatus", json!({"recipient": [self.account]}))
            .await;
        let uuid = asked
            .ok()
            .and_then(|r| r[0]["uuid"].as_str().map(str::to_string));
        if let (Some(uuid), Ok(mut own)) = (uuid, self.own.lock()) {
            own.uuid = Some(uuid);
        }
    }

    /// The params naming `chat`: a number (or a sender's ACI) as `recipient`, else a group.
    fn target(chat: &str) -> Value {
        let number = chat
            .strip_prefix('+')
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        let aci = chat.len() == 36 && chat.chars().filter(|c| *c == '-').count() == 4;
        if number || aci {
            json!({"recipient": [chat]})
        } else {
            json!({"groupId": crate::signal_events::group_id(chat)})
        }
    }

    async fn send_attachment(
        &self,
        chat: &str,
        uri: String,
        voice: bool,
        reply_to: Option<&str>,
    ) -> Result<(), ChannelError> {
        let mut params = Self::target(chat);
        params["attachment"] = json!(uri);
        if voice {
            params["voiceNote"] = json!(true);
        }
        quote(&mut params, reply_to);
        self.call("send", params).await.map(|_| ())
    }
}

/// A JSON-RPC error of signal-cli, classified for the retry policy.
fn refused(code: i64, message: &str, account: &str) -> ChannelError {
    let text = format!("signal-cli: {message} ({code})");
    match code {
        // Rate limited by Signal: wait before trying again.
        -5 => ChannelError::RetryAfter(Duration::from_secs(30), text),
        // An I/O failure or an internal error of signal-cli may pass.
        -3 | -32603 => ChannelError::Transient(text),
        -4 => ChannelError::Permanent(format!(
            "{text}: the recipient's safety number changed; check it, then run `signal-cli -a {account} trust`"
        )),
        _ => ChannelError::Permanent(text),
    }
}

/// Quotes the message `reply_to` (`timestamp:author`) in `params`.
fn quote(params: &mut Value, reply_to: Option<&str>) {
    if let Some((timestamp, author)) = reply_to.and_then(|r| r.split_once(':'))
        && let Ok(timestamp) = timestamp.parse::<u64>()
    {
        params["quoteTimestamp"] = json!(timestamp);
        params["quoteAuthor"] = json!(author);
    }
}

/// `bytes` as the data URI signal-cli takes for an attachment.
fn data_uri(mime: &str, name: &str, bytes: &[u8]) -> String {
    let name: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .collect();
    format!(
        "data:{mime};filename={name};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

impl Channel for Signal {
    fn name(&self) -> &'static str {
        "signal"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    /// The Markdown as it is: it becomes text styles when sent.
    fn format(&self, markdown: &str) -> String {
        markdown.to_string()
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let mut slot = self.stream.lock().await;
            loop {
                let open = match &mut *slot {
                    Some(open) => open,
                    None => match self.open().await {
                        Ok(open) => slot.insert(open),
                        Err(e) => {
                            self.set_stale(Some(format!("signal-cli at {}: {e}", self.base)));
                            return Err(e);
                        }
                    },
                };
                let read = tokio::time::timeout(self.silence, open.response.chunk()).await;
                let bytes = match read {
                    Ok(Ok(Some(bytes))) => bytes,
                    gone => {
                        *slot = None;
                        let why = match gone {
                            Err(_) => format!(
                                "signal-cli's event stream said nothing for {} s (its keep-alive comes every 15 s): reconnecting",
                                self.silence.as_secs()
                            ),
                            Ok(Err(e)) => {
                                format!("signal-cli's event stream broke: {}", e.without_url())
                            }
                            Ok(Ok(_)) => "signal-cli closed its event stream: reconnecting".into(),
                        };
                        self.set_stale(Some(why.clone()));
                        return Err(ChannelError::Transient(why));
                    }
                };
                open.buffer.extend_from_slice(&bytes);
                let parsed = parse_stream(&mut open.buffer, &mut open.data);
                if parsed.alive {
                    self.set_stale(None);
                }
                let own = self.own.lock().map(|o| o.clone()).unwrap_or_default();
                let batch: Vec<Inbound> = parsed
                    .events
                    .iter()
                    .filter_map(|data| inbound_of(data, &own))
                    .collect();
                let fresh = std::mem::take(&mut open.fresh);
                if !batch.is_empty() || (fresh && parsed.alive) {
                    if let Ok(mut received) = self.received.lock() {
                        *received = batch.clone();
                    }
                    return Ok(batch);
                }
            }
        })
    }

    /// Marks the recorded batch read (the sender sees it was read).
    fn acknowledge(&self) {
        let batch = self
            .received
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default();
        for message in batch {
            let Some((timestamp, sender)) = message.message_id.split_once(':') else {
                continue;
            };
            let Ok(timestamp) = timestamp.parse::<u64>() else {
                continue;
            };
            let (rpc, sender) = (self.rpc.clone(), sender.to_string());
            // Best effort, never in the way of the answer.
            tokio::spawn(async move {
                let params =
                    json!({"recipient": [sender], "targetTimestamp": [timestamp], "type": "read"});
                if let Err(e) = rpc.call("sendReceipt", params).await {
                    tracing::debug!(error = %e, "Signal read receipt not sent");
                }
            });
        }
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move { self.send_once(chat, text, reply_to, "").await.map(|_| ()) })
    }

    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        _key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            let (plain, styles) = signal_text(text);
            let mut params = Self::target(chat);
            params["message"] = json!(plain);
            if !styles.is_empty() {
                params["textStyle"] = json!(styles);
            }
            quote(&mut params, reply_to);
            let result = self.call("send", params).await?;
            Ok(result["timestamp"].as_u64().map(|t| t.to_string()))
        })
    }

    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self.call("sendTyping", Self::target(chat)).await;
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: VoiceNote<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let uri = data_uri("audio/ogg", "voice.ogg", note.ogg);
            self.send_attachment(chat, uri, true, reply_to).await
        })
    }

    fn send_picture<'a>(
        &'a self,
        chat: &'a str,
        picture: Picture<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let uri = data_uri(picture.mime, picture.name, picture.bytes);
            self.send_attachment(chat, uri, false, reply_to).await
        })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(daemon) = &self.daemon {
                daemon.stop().await;
            }
        })
    }

    fn stale(&self) -> Option<String> {
        self.stale.get()
    }

    fn media_bytes<'a>(
        &'a self,
        file: &'a str,
        max: u64,
    ) -> BoxFuture<'a, Option<Result<Vec<u8>, ChannelError>>> {
        Box::pin(async move {
            let fetched = async {
                let result = self.call("getAttachment", json!({"id": file})).await?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(result["data"].as_str().unwrap_or_default())
                    .map_err(|e| ChannelError::Permanent(format!("the attachment's data: {e}")))?;
                if bytes.len() as u64 > max {
                    return Err(ChannelError::Permanent(format!(
                        "{} bytes, over the {max}-byte limit",
                        bytes.len()
                    )));
                }
                Ok(bytes)
            };
            Some(fetched.await)
        })
    }
}

#[cfg(test)]
mod tests;
