//! A channel a plugin provides (ARCHITECTURE.md §7d), on the one channel path: the plugin's
//! `channel.receive` requests become a batch for the receive loop, each answered `{recorded}`
//! only once the gateway recorded it (or found it recorded before), so the plugin acknowledges
//! to its platform after that and never before; replies leave through the outbox as
//! `channel.send` with the outbox entry's key, and the plugin's error data (`retryAfterMs`,
//! `permanent`) drive the outbox's retries; `channel.status` is the channel's status.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lurkbot_channels::{BoxFuture, Channel, ChannelError, Inbound};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::plugins::rpc::{Peer, RpcError};

/// How long a plugin has to answer `channel.send`.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest message handed to a plugin at once (it may cut further for its platform).
const MAX_CHARS: usize = 4000;

/// Who waits for a message's `{recorded}`: the plugin's request.
struct Waiting {
    id: String,
    peer: Arc<Peer>,
    request: Value,
}

/// The plugin process a channel speaks through (changes when it restarts).
pub(crate) type PeerSlot = Arc<Mutex<Option<Arc<Peer>>>>;

/// Whether the plugin is wanted running: a plugin that provides channels starts only once one
/// of them receives — on the gateway holding the channel's lease (§6.3), so one gateway of
/// several connects to the platform.
#[derive(Default)]
pub(crate) struct Wanted {
    flag: std::sync::atomic::AtomicBool,
    wake: tokio::sync::Notify,
}

impl Wanted {
    /// Wants it running.
    pub(crate) fn want(&self) {
        if !self.flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.wake.notify_one();
        }
    }

    /// Waits until it is wanted.
    pub(crate) async fn wait(&self) {
        while !self.flag.load(std::sync::atomic::Ordering::SeqCst) {
            self.wake.notified().await;
        }
    }
}

/// One channel of a plugin.
pub(crate) struct PluginChannel {
    name: &'static str,
    peer: PeerSlot,
    wanted: Arc<Wanted>,
    tx: mpsc::UnboundedSender<(Inbound, Waiting)>,
    inbox: tokio::sync::Mutex<mpsc::UnboundedReceiver<(Inbound, Waiting)>>,
    waiting: Mutex<Vec<Waiting>>,
    /// The plugin's last `channel.status`: (state, detail).
    status: Mutex<(String, Option<String>)>,
    /// A status came; and whether `connected` was reported to the receive loop since.
    status_changed: tokio::sync::Notify,
    reported: std::sync::atomic::AtomicBool,
    /// Whether this gateway receives the channel (its receive loop, after the lease, asked).
    receiving: std::sync::atomic::AtomicBool,
}

impl PluginChannel {
    /// Channel `name`, speaking through whatever process `peer` holds, and starting its plugin
    /// (`wanted`) when it first receives.
    pub(crate) fn new(name: &'static str, peer: PeerSlot, wanted: Arc<Wanted>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            name,
            peer,
            wanted,
            tx,
            inbox: tokio::sync::Mutex::new(rx),
            waiting: Mutex::new(Vec::new()),
            status: Mutex::new(("connecting".into(), None)),
            status_changed: tokio::sync::Notify::new(),
            reported: std::sync::atomic::AtomicBool::new(false),
            receiving: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The plugin's `channel.receive` `request` (asked as `id` over `peer`): checked and handed
    /// to the receive loop, or refused at once with why.
    pub(crate) async fn deliver(&self, peer: Arc<Peer>, id: Value, params: &Value) {
        let text = |k: &str| {
            params[k]
                .as_str()
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let (Some(message_id), Some(chat), Some(sender)) =
            (text("id"), text("chat"), text("sender"))
        else {
            let why = "channel.receive needs id, chat and sender (non-empty strings)";
            peer.respond(id, Err((-32602, why.into()))).await;
            return;
        };
        // A plugin with hooks runs on every gateway; only the lease holder receives its
        // channel: elsewhere a message is refused (to be delivered again), never held unanswered.
        if !self.receiving.load(std::sync::atomic::Ordering::SeqCst) {
            let why = format!(
                "this gateway does not receive channel {} (another one holds it): deliver it again later",
                self.name
            );
            peer.respond(id, Err((-32000, why))).await;
            return;
        }
        let inbound = Inbound {
            channel: self.name,
            chat,
            sender_name: text("senderName").unwrap_or_else(|| sender.clone()),
            sender,
            handle: None,
            forwarded_from: None,
            authenticated: true,
            text: text("text").unwrap_or_default(),
            group: params["group"].as_bool().unwrap_or(false),
            mentioned: params["mentioned"].as_bool().unwrap_or(false),
            message_id: message_id.clone(),
            thread: None,
            platform_id: Some(message_id.clone()),
            media: Vec::new(),
        };
        let waiting = Waiting {
            id: message_id,
            peer,
            request: id,
        };
        if let Err(mpsc::error::SendError((_, waiting))) = self.tx.send((inbound, waiting)) {
            waiting
                .peer
                .respond(
                    waiting.request,
                    Err((
                        -32000,
                        "the channel is stopping: deliver it again later".into(),
                    )),
                )
                .await;
        }
    }

    /// The plugin's `channel.status`.
    pub(crate) fn set_status(&self, state: &str, detail: Option<String>) {
        if let Ok(mut status) = self.status.lock() {
            *status = (state.to_string(), detail);
        }
        if state != "connected" {
            self.reported
                .store(false, std::sync::atomic::Ordering::SeqCst);
        }
        self.status_changed.notify_one();
    }

    fn connected(&self) -> bool {
        self.status.lock().is_ok_and(|s| s.0 == "connected")
    }

    /// The plugin stopped: the channel waits for the next process.
    pub(crate) fn plugin_gone(&self, why: &str) {
        self.set_status(
            "connecting",
            Some(format!("the plugin is restarting: {why}")),
        );
    }

    fn peer(&self) -> Result<Arc<Peer>, ChannelError> {
        self.peer
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .filter(|p| !p.is_closed())
            .ok_or_else(|| {
                ChannelError::Transient(format!(
                    "the plugin of channel {} is not running",
                    self.name
                ))
            })
    }
}

/// A plugin's `channel.send` error as the outbox reads it.
fn send_error(e: RpcError) -> ChannelError {
    match e {
        RpcError::Remote {
            message,
            data,
            code,
        } => {
            let text = format!("{message} (error {code})");
            if data["permanent"].as_bool() == Some(true) {
                ChannelError::Permanent(text)
            } else if let Some(ms) = data["retryAfterMs"].as_u64() {
                ChannelError::RetryAfter(Duration::from_millis(ms), text)
            } else {
                ChannelError::Transient(text)
            }
        }
        other => ChannelError::Transient(other.to_string()),
    }
}

impl Channel for PluginChannel {
    fn name(&self) -> &'static str {
        self.name
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        markdown.to_string()
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            // Receiving here: this gateway holds the channel, its plugin runs here.
            self.receiving
                .store(true, std::sync::atomic::Ordering::SeqCst);
            self.wanted.want();
            // Messages of the last batch never recorded (the store failed): the plugin is told
            // so, and delivers them again.
            let unanswered: Vec<Waiting> = self
                .waiting
                .lock()
                .map(|mut w| std::mem::take(&mut *w))
                .unwrap_or_default();
            for w in unanswered {
                w.peer
                    .respond(
                        w.request,
                        Err((
                            -32000,
                            "not recorded (the state store failed): deliver it again".into(),
                        )),
                    )
                    .await;
            }
            let mut inbox = self.inbox.lock().await;
            let (first, waiting) = loop {
                // Connected: said to the receive loop at once (the channel's status), once.
                if self.connected()
                    && !self
                        .reported
                        .swap(true, std::sync::atomic::Ordering::SeqCst)
                {
                    return Ok(Vec::new());
                }
                tokio::select! {
                    next = inbox.recv() => match next {
                        Some(next) => break next,
                        None => return Err(ChannelError::Permanent("the plugin channel stopped".into())),
                    },
                    () = self.status_changed.notified() => {}
                }
            };
            let mut batch = vec![first];
            let mut all = vec![waiting];
            while let Ok((more, waiting)) = inbox.try_recv() {
                batch.push(more);
                all.push(waiting);
            }
            if let Ok(mut w) = self.waiting.lock() {
                *w = all;
            }
            Ok(batch)
        })
    }

    fn recorded(&self, message: &Inbound, fresh: bool) {
        let found = self.waiting.lock().ok().and_then(|mut w| {
            let at = w.iter().position(|x| x.id == message.message_id)?;
            Some(w.swap_remove(at))
        });
        if let Some(w) = found {
            tokio::spawn(async move {
                w.peer
                    .respond(w.request, Ok(json!({"recorded": fresh})))
                    .await;
            });
        }
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let key = format!("lurkbot-{}", lurkbot_core::random_hex(8));
            self.send_once(chat, text, reply_to, &key).await.map(|_| ())
        })
    }

    /// The outbox's key goes with the message: a plugin that keeps it sends a retried reply once.
    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            let peer = self.peer()?;
            let mut params = json!({"channel": self.name, "chat": chat, "text": text, "key": key});
            if let Some(reply_to) = reply_to {
                params["replyTo"] = json!(reply_to);
            }
            let result = peer
                .request("channel.send", params, SEND_TIMEOUT)
                .await
                .map_err(send_error)?;
            Ok(result["id"].as_str().map(str::to_string))
        })
    }

    fn typing<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Stale while the plugin says so (or anything but connected after it was), or while it
    /// is not running.
    fn stale(&self) -> Option<String> {
        if self.peer().is_err() {
            return Some(format!(
                "the plugin of channel {} is not running",
                self.name
            ));
        }
        let (state, detail) = self.status.lock().ok()?.clone();
        match state.as_str() {
            "connected" => None,
            "connecting" if detail.is_none() => None,
            _ => Some(detail.unwrap_or_else(|| format!("the plugin says the channel is {state}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message for a channel this gateway does not receive (another holds its lease) is
    /// refused at once, so the plugin can deliver it again; never held unanswered.
    #[tokio::test]
    async fn a_message_this_gateway_does_not_receive_is_refused_not_held() {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        let (peer, _incoming) = Peer::start("test", write, read);
        let channel = PluginChannel::new("testchan", Arc::default(), Arc::default());
        let params =
            json!({"channel": "testchan", "id": "m1", "chat": "a", "sender": "a", "text": "hi"});
        channel.deliver(peer, json!(7), &params).await;
        let (their_read, _their_write) = tokio::io::split(theirs);
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(their_read));
        let line = lines
            .next_line()
            .await
            .unwrap_or_default()
            .unwrap_or_default();
        let answer: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(answer["id"], 7, "{line}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("does not receive channel testchan"),
            "{line}"
        );
    }
}
