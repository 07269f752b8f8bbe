//! What a WebSocket connection sends, queued by whoever answers or emits on it.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use super::Event;

/// What a connection sends.
pub(crate) enum Out {
    /// A response frame.
    Frame(Value),
    /// An event (numbered when sent).
    Event(Event),
    /// An event already in OpenClaw's shape (numbered when sent).
    Shaped(&'static str, Value),
    /// From now on, shape events for OpenClaw's dialect (sent once, after its `hello-ok`);
    /// the flag is the connection's `sessions.subscribe`.
    SpeakOpenClaw(Arc<AtomicBool>),
    /// Close with a code and reason.
    Close(u16, String),
}
