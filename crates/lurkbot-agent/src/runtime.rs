//! What the autonomy tools (`sessions_spawn`, `sessions_send`, `message`, `cron`) and the
//! cron and heartbeat runners need from whoever runs sessions: the gateway's session host, or
//! the CLI's [`LocalRuntime`](crate::LocalRuntime). One trait, so sub-agents, cron jobs and
//! heartbeats behave the same in both.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lurkbot_core::SessionKey;

use crate::outcome::TurnOutcome;
use crate::subagents::Subagents;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One turn to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRequest {
    /// The session.
    pub session: SessionKey,
    /// The turn's message.
    pub message: String,
    /// A model for this turn (`provider/model`) instead of the configured one.
    pub model: Option<String>,
    /// A thinking level for this turn.
    pub thinking: Option<String>,
    /// A one-off turn (a sub-agent's, a cron run's, a heartbeat's): the session's resources in
    /// a long-lived host are released when it ends (its transcript stays).
    pub one_off: bool,
    /// A cap on this run's tokens (a cron job's, a sub-agent's, the heartbeat's day).
    pub budget: Option<crate::usage::RunBudget>,
    /// The source id of what starts it (a cron job's scheduled run, `cron:<id>:<ms>`): one
    /// source id starts one turn; asked again (after a restart), the runtime attaches to it.
    pub source: Option<String>,
}

impl TurnRequest {
    /// A turn with the configured model and thinking level.
    pub fn new(session: SessionKey, message: impl Into<String>) -> Self {
        Self {
            session,
            message: message.into(),
            model: None,
            thinking: None,
            one_off: false,
            budget: None,
            source: None,
        }
    }

    /// The same turn as a one-off (see [`TurnRequest::one_off`]).
    #[must_use]
    pub fn one_off(mut self) -> Self {
        self.one_off = true;
        self
    }
}

/// A started turn.
pub struct TurnHandle {
    /// Its run id.
    pub run_id: String,
    /// Resolves to its outcome (an error text when it failed or was aborted).
    pub done: BoxFuture<'static, Result<TurnOutcome, String>>,
}

/// A message for a channel (the `message` tool, cron `announce`, heartbeat `sent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outbound {
    /// `webchat`, `last`, or a channel (`irc`, `telegram`, `discord`, `slack`, `matrix`,
    /// `email`).
    pub channel: String,
    /// A recipient on the channel (an IRC channel or nick, a chat, channel or room id, an
    /// address).
    pub to: Option<String>,
    /// The text.
    pub text: String,
    /// The session the message comes from.
    pub from: SessionKey,
    /// Who asked for it (ARCHITECTURE.md §5.1): the owner (an owner's cron job, the
    /// heartbeat's configured target) may name any recipient; the model's messages, and its
    /// cron jobs' announces, keep the gate's rules for the model.
    pub asker: crate::gate::Asker,
}

/// Channels the `message` tool knows: the web UI, every platform of
/// [`lurkbot_core::CHANNEL_NAMES`] (a test keeps the two lists together), and `last`.
pub const CHANNELS: &[&str] = &[
    "webchat", "irc", "telegram", "discord", "slack", "matrix", "email", "whatsapp", "signal",
    "last",
];

/// Runs turns on sessions and delivers messages.
pub trait Runtime: Send + Sync {
    /// Starts a turn once the session is free (a running turn is waited out).
    fn start(&self, request: TurnRequest) -> BoxFuture<'_, Result<TurnHandle, String>>;
    /// Whether a turn runs on `session` now.
    fn busy(&self, session: &SessionKey) -> bool;
    /// Aborts the turn running on `session`, if any.
    fn abort<'a>(&'a self, session: &'a SessionKey) -> BoxFuture<'a, ()>;
    /// Delivers a message; the answer says where it went.
    fn deliver(&self, message: Outbound) -> BoxFuture<'_, Result<String, String>>;
    /// Appends `text` as a user-role entry to `session`'s transcript without a model call (a
    /// cron job's system event), once no turn runs there — never between a running turn's tool
    /// call and its result — and resolves when it is written.
    fn inject<'a>(
        &'a self,
        session: &'a SessionKey,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>>;
    /// Runs `task` (a sub-agent's run and announce) in the background on behalf of
    /// `requester`: the owner waits for it ([`LocalRuntime::idle`](crate::LocalRuntime::idle))
    /// or aborts it with the requester.
    fn track(&self, requester: &SessionKey, task: BoxFuture<'static, ()>);
    /// The running sub-agents.
    fn subagents(&self) -> &Subagents;
    /// The gateway these sessions run in, for the `gateway` tool; `None` outside one (the
    /// CLI), where the tool is not offered.
    fn gateway(&self) -> Option<std::sync::Arc<dyn GatewayControl>> {
        None
    }
}

/// What the `gateway` tool may ask of the gateway its session runs in (ARCHITECTURE.md §5.2).
pub trait GatewayControl: Send + Sync {
    /// The gateway's state, as the `status` method answers it.
    fn status(&self) -> BoxFuture<'_, serde_json::Value>;
    /// Changes `config.toml` by `patch` (`{section: {key: value}}`), asked by `asker` from
    /// `session`: decided by the gate (a model's change needs a human's approval each time,
    /// and keys that widen its powers are refused), validated, written atomically and
    /// reloaded. The answer says what changed and what the reload did.
    fn patch<'a>(
        &'a self,
        session: &'a SessionKey,
        patch: &'a serde_json::Value,
        asker: crate::gate::Asker,
    ) -> BoxFuture<'a, Result<serde_json::Value, String>>;
    /// Reads `config.toml` again and puts it in force.
    fn reload(&self) -> Result<serde_json::Value, String>;
    /// Whether a client that can show canvas widgets is attached (the web UI, or a client
    /// whose `connect` lists `"canvas"` in `caps`).
    fn shows_canvas(&self) -> bool;
    /// Tells the attached clients a widget changed (event `canvas`).
    fn canvas_changed(&self, change: crate::canvas::CanvasChange);
    /// Whether the owner has approved a node: the `nodes` tool is offered only then.
    fn has_nodes(&self) -> bool;
    /// The `nodes` tool's `{action: list|describe|invoke, node?, command?, params?,
    /// timeoutMs?}`, asked by `asker` from `session`; an invocation passes the gate
    /// (`gate::Act::NodeCommand`) first.
    fn nodes<'a>(
        &'a self,
        session: &'a SessionKey,
        args: &'a serde_json::Value,
        asker: crate::gate::Asker,
    ) -> BoxFuture<'a, Result<serde_json::Value, String>>;
}

/// Runs a started turn to its end, at most `timeout` long (then it is aborted).
///
/// # Errors
/// The turn's error, or `timed out after N s`.
pub async fn finish_within(
    runtime: &dyn Runtime,
    session: &SessionKey,
    handle: TurnHandle,
    timeout: Duration,
) -> Result<TurnOutcome, String> {
    match tokio::time::timeout(timeout, handle.done).await {
        Ok(result) => result,
        Err(_) => {
            runtime.abort(session).await;
            Err(format!("timed out after {} s", timeout.as_secs()))
        }
    }
}
