//! The sending half of a WebSocket connection (operator or node): numbers events, shapes them
//! for the connection's dialect and closes with a code.

use crate::protocol::Out;
use crate::protocol::{
    self, Event, EventFrame, MAX_PAYLOAD, MethodError, ProtocolVersion, Shutdown,
};
use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use futures_util::SinkExt;
use serde_json::Value;

/// The answer to a binary frame (the protocol is JSON text).
pub(crate) fn binary_refused() -> Out {
    let e = MethodError::invalid("binary frames are not part of the protocol");
    Out::Frame(protocol::err(None, &e))
}

/// The sending half of a connection: numbers events and shapes them for the connection's
/// dialect.
pub(crate) struct Writer {
    sink: futures_util::stream::SplitSink<WebSocket, Message>,
    seq: u64,
    /// LurkBot's shapes until a connection speaks OpenClaw's (the challenge is the same in
    /// both).
    shaper: Option<crate::openclaw::Shaper>,
}

impl Writer {
    /// The writer of a connection's sending half.
    pub(crate) fn new(sink: futures_util::stream::SplitSink<WebSocket, Message>) -> Self {
        Self {
            sink,
            seq: 0,
            shaper: None,
        }
    }

    fn shaped(&mut self, event: &str, payload: Value) -> Message {
        self.seq += 1;
        Message::Text(
            protocol::shaped_event(event, payload, self.seq)
                .to_string()
                .into(),
        )
    }

    /// Refuses a frame of `len` bytes over the payload cap and closes the connection; whether
    /// it was over.
    pub(crate) async fn refused_oversized(&mut self, len: usize) -> bool {
        if len <= MAX_PAYLOAD {
            return false;
        }
        let e = MethodError::invalid(format!(
            "frame of {len} bytes is over the {MAX_PAYLOAD}-byte cap"
        ));
        if self.write(Out::Frame(protocol::err(None, &e))).await {
            self.write(Out::Close(close_code::SIZE, "frame too large".into()))
                .await;
        }
        true
    }

    /// Tells the client the gateway stops (event `shutdown`) and closes.
    pub(crate) async fn say_stopping(&mut self) {
        let reason = "the gateway is stopping".to_string();
        if self
            .write(Out::Event(Event::Shutdown(Shutdown { reason })))
            .await
        {
            self.write(Out::Close(close_code::AWAY, "gateway stopping".into()))
                .await;
        }
    }

    /// Sends one item; `false` when the connection is done (closed, or the client is gone).
    pub(crate) async fn write(&mut self, item: Out) -> bool {
        let message = match item {
            Out::Frame(v) => Message::Text(v.to_string().into()),
            Out::Event(event) => match self.shaper.as_mut() {
                None => {
                    self.seq += 1;
                    let frame = ProtocolVersion::V1.event_frame(&EventFrame {
                        event,
                        seq: self.seq,
                    });
                    Message::Text(frame.to_string().into())
                }
                Some(shaper) => {
                    let shaped = shaper.shape(event);
                    for (name, payload) in shaped {
                        let message = self.shaped(name, payload);
                        if self.sink.send(message).await.is_err() {
                            return false;
                        }
                    }
                    return true;
                }
            },
            Out::Shaped(name, payload) => self.shaped(name, payload),
            Out::SpeakOpenClaw(subscribed) => {
                self.shaper = Some(crate::openclaw::Shaper::new(subscribed));
                return true;
            }
            Out::Close(code, reason) => {
                let _ = self
                    .sink
                    .send(Message::Close(Some(CloseFrame {
                        code,
                        reason: reason.chars().take(120).collect::<String>().into(),
                    })))
                    .await;
                return false;
            }
        };
        self.sink.send(message).await.is_ok()
    }
}
