//! The WebSockets of Discord's gateway and Slack's Socket Mode: `ws://` or `wss://` over the
//! connections of [`crate::net`].

use std::time::Duration;

use tokio::sync::mpsc;

use crate::net::{Io, connect, host_port};
use crate::{ChannelError, Inbound};

/// A WebSocket over a plain or TLS connection.
pub(crate) type Socket = tokio_tungstenite::WebSocketStream<Box<dyn Io>>;

/// Opens the WebSocket at `url` (`wss://` through rustls with the platform's roots); `what`
/// names it in errors.
pub(crate) async fn open(url: &str, what: &str) -> Result<Socket, ChannelError> {
    let default_port = if url.starts_with("wss://") { 443 } else { 80 };
    let (scheme, host, port) = host_port(url, default_port)
        .filter(|(s, _, _)| s == "ws" || s == "wss")
        .ok_or_else(|| ChannelError::Permanent(format!("{what} URL {url} is not ws(s)://")))?;
    let stream = connect(&host, port, scheme == "wss", what).await?;
    let (socket, _) = tokio_tungstenite::client_async_with_config(url, stream, Some(config()))
        .await
        .map_err(|e| ChannelError::Transient(format!("{what}: {e}")))?;
    Ok(socket)
}

/// The sockets' settings: tungstenite's default read buffer is 128 KiB, zero-filled when the
/// first frame is read, so each open channel socket held that much memory while idle. Frames are
/// read in 8 KiB pieces instead; a message may still be as large as the default allows.
pub(crate) fn config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(8 * 1024)
}

/// What a socket task hands over: messages, or the refusal that ended it.
pub(crate) type Handed = Result<Inbound, ChannelError>;

/// The messages a background socket task (Discord's gateway, Slack's Socket Mode) hands over,
/// received in batches: the task is started on the first receive and again after it ended.
#[derive(Default)]
pub(crate) struct SocketInbox {
    state: tokio::sync::Mutex<(Option<mpsc::Receiver<Handed>>, Option<ChannelError>)>,
}

impl SocketInbox {
    /// The next batch (waiting for one); `start` spawns the task with the sender to hand to.
    /// A refusal arriving after messages is kept for the next call, never dropped.
    pub(crate) async fn next(
        &self,
        what: &str,
        start: impl FnOnce(mpsc::Sender<Handed>),
    ) -> Result<Vec<Inbound>, ChannelError> {
        let mut state = self.state.lock().await;
        let (inbox, pending) = &mut *state;
        if let Some(e) = pending.take() {
            *inbox = None;
            return Err(e);
        }
        let rx = match inbox {
            Some(rx) => rx,
            None => {
                let (tx, rx) = mpsc::channel(256);
                start(tx);
                inbox.insert(rx)
            }
        };
        match rx.recv().await {
            Some(Ok(first)) => {
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    match more {
                        Ok(message) => batch.push(message),
                        Err(e) => {
                            *pending = Some(e);
                            break;
                        }
                    }
                }
                Ok(batch)
            }
            // A permanent refusal: the next receive starts anew (after the caller's back-off).
            Some(Err(e)) => {
                *inbox = None;
                Err(e)
            }
            None => {
                *inbox = None;
                Err(ChannelError::Transient(format!("{what} task ended")))
            }
        }
    }
}

/// A socket's liveness (ARCHITECTURE.md §6.1.2): a ping goes out every `ping_every`, any frame
/// that comes back counts, and a socket silent for `silence` is dead — dropped and opened
/// again, and the channel `stale` with why until a new one speaks.
#[derive(Clone)]
pub(crate) struct Liveness {
    pub(crate) ping_every: Duration,
    pub(crate) silence: Duration,
    stale: crate::stale::Stale,
}

impl Liveness {
    /// Pings every `ping_every`; dead after `silence`.
    pub(crate) fn new(ping_every: Duration, silence: Duration) -> Self {
        Self {
            ping_every,
            silence,
            stale: crate::stale::Stale::default(),
        }
    }

    /// The socket spoke.
    pub(crate) fn alive(&self) {
        self.stale.set(None);
    }

    /// The socket is dead, or cannot be opened, for `why`.
    pub(crate) fn dead(&self, why: String) {
        self.stale.set(Some(why));
    }

    /// Why the channel is stale, if it is.
    pub(crate) fn stale(&self) -> Option<String> {
        self.stale.get()
    }
}

#[cfg(test)]
mod tests {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    /// The small read buffer bounds a read, not a message: a frame many times its size (a
    /// Discord `READY` with many guilds, a WhatsApp history sync) arrives whole, and the next
    /// one after it.
    #[tokio::test]
    async fn a_message_larger_than_the_read_buffer_arrives_whole() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let big: String = (0..200 * 1024)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let sent = big.clone();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut ws = tokio_tungstenite::accept_async(stream).await.unwrap();
            ws.send(Message::text(sent)).await.unwrap();
            ws.send(Message::text("after")).await.unwrap();
            // Held open until the client has read both.
            let _ = ws.next().await;
        });
        let mut socket = super::open(&format!("ws://127.0.0.1:{port}/"), "test")
            .await
            .unwrap();
        let first = socket.next().await.unwrap().unwrap();
        assert_eq!(first.into_text().unwrap().as_str(), big);
        let second = socket.next().await.unwrap().unwrap();
        assert_eq!(second.into_text().unwrap().as_str(), "after");
        socket.close(None).await.unwrap();
        server.await.unwrap();
    }
}
