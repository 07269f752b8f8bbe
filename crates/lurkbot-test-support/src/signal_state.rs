//! The signal-cli test daemon's state (`signal_server`), which its JSON-RPC methods
//! (`signal_rpc`) read and change.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::Value;

/// The account's own ACI (what `getUserStatus` answers for it, and what a mention of it carries).
pub const OWN_UUID: &str = "4f1e2d3c-5b6a-4789-8abc-0123456789ab";

/// A JSON-RPC call the daemon answered (sends, typing, receipts, downloads).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The method.
    pub method: String,
    /// Its params.
    pub params: Value,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) account: String,
    /// Envelopes Signal holds until a client is connected.
    pub(crate) queued: VecDeque<Value>,
    /// Every envelope written to a client, in order.
    pub(crate) delivered: Vec<Value>,
    pub(crate) calls: Vec<Call>,
    pub(crate) registered: Vec<String>,
    pub(crate) groups: Vec<String>,
    pub(crate) attachments: Vec<(String, Vec<u8>)>,
    pub(crate) rate_limits: usize,
    pub(crate) clock: u64,
    pub(crate) connections: usize,
    pub(crate) check_fails: bool,
    pub(crate) silent: bool,
    /// Streams opened before the last silence are dead for good (the daemon lost them).
    pub(crate) generation: u64,
    pub(crate) keep_alive: Duration,
}
