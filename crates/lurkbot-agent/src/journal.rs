//! Where a turn records how far it got (ARCHITECTURE.md §6.3): the transcript's length before
//! its message, each model step, and the tool call in flight — running, or waiting for a
//! human's approval. The gateway hands one to the agent per turn; a resumed turn reads it back.
//! A failure to record is logged, never fatal: the transcript stays the turn's content.

use lurkbot_state::Store;

/// The journal of one turn.
#[derive(Debug, Clone)]
pub struct Journal {
    store: Store,
    turn: String,
}

/// What the journal says about a call in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InFlight<'a> {
    /// The call runs: cut by a crash, its effect is unknown.
    Running(&'a str),
    /// The call waits for a human's decision: it has not run, and is asked again.
    Approval(&'a str),
}

impl InFlight<'_> {
    /// Reads the journal's `tool` column (`run <call id> <tool>`, `approval <call id> <tool>`).
    pub fn parse(tool: &str) -> Option<InFlight<'_>> {
        let mut parts = tool.splitn(3, ' ');
        match (parts.next(), parts.next()) {
            (Some("run"), Some(id)) => Some(InFlight::Running(id)),
            (Some("approval"), Some(id)) => Some(InFlight::Approval(id)),
            _ => None,
        }
    }
}

impl Journal {
    /// The journal of turn `turn` in `store`.
    pub fn new(store: Store, turn: impl Into<String>) -> Self {
        Self {
            store,
            turn: turn.into(),
        }
    }

    /// The turn's id.
    pub fn turn(&self) -> &str {
        &self.turn
    }

    /// The transcript is `len` bytes long just before the turn's message is appended.
    pub(crate) fn base(&self, len: u64) {
        if let Err(e) = self.store.set_base(&self.turn, len) {
            tracing::warn!(turn = self.turn.as_str(), error = %e, "turn journal not written");
        }
    }

    /// Step `step` is recorded; `tool` is the call in flight, if any.
    pub(crate) fn step(&self, step: usize, tool: Option<(&str, &str, &str)>) {
        let tool = tool.map(|(phase, id, name)| format!("{phase} {id} {name}"));
        let step = u32::try_from(step).unwrap_or(u32::MAX);
        if let Err(e) = self.store.set_step(&self.turn, step, tool.as_deref()) {
            tracing::warn!(turn = self.turn.as_str(), error = %e, "turn journal not written");
        }
    }
}
