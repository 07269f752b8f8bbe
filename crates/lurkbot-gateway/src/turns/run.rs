//! How a turn is asked for ([`TurnOptions`], where its answer goes: [`Origin`]) and how it
//! ended ([`RunEnd`], what `agent.wait` answers).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Where a turn's answer goes, recorded with it so a resumed turn delivers it too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Origin {
    /// A client (WebSocket, the HTTP API, a hook, the gateway's own work): the answer goes out
    /// as the run's events and stays in the journal (a retried request finds it there).
    #[default]
    Client,
    /// A channel message: the answer is sent to its chat through the outbox.
    Channel {
        /// The channel.
        channel: String,
        /// The chat.
        chat: String,
        /// The message answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<String>,
    },
}

/// Where a resumed turn was, as its journal says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resume {
    /// The transcript's length before the turn's message.
    pub base: Option<u64>,
    /// The tool call in flight.
    pub tool: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The final reply.
    Done {
        /// Reply text.
        text: String,
        /// Model that answered.
        model: String,
    },
    /// The turn failed.
    Failed(String),
    /// `chat.abort` or shutdown stopped it.
    Aborted,
}

impl RunEnd {
    /// The wire form.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Done { text, model } => json!({"status": "ok", "text": text, "model": model}),
            Self::Failed(message) => json!({"status": "error", "message": message}),
            Self::Aborted => json!({"status": "aborted"}),
        }
    }
}

/// A turn's own model and thinking level (a sub-agent's or a cron job's), when it has them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnOptions {
    /// `provider/model` instead of the configured model.
    pub model: Option<String>,
    /// A thinking level.
    pub thinking: Option<String>,
    /// A cap on the run's tokens.
    pub budget: Option<lurkbot_agent::usage::RunBudget>,
    /// The message is someone else's text (an auto-forwarded IRC line): the turn runs with
    /// the group tool policy (ARCHITECTURE.md §5.1).
    pub untrusted: bool,
    /// Images shown with the message (photos sent on a channel).
    pub images: Vec<lurkbot_llm::ImagePart>,
    /// Where the answer goes (recorded with the turn: a resumed turn delivers it too).
    pub origin: Origin,
    /// The turn was admitted already under its run id (`SessionHost::admit_source`).
    pub admitted: bool,
    /// The turn continues where its journal says it stopped (a restart cut it).
    pub resume: Option<Resume>,
    /// The trace the turn's span joins (an HTTP request's `traceparent`).
    pub trace_parent: Option<lurkbot_core::trace::TraceContext>,
}

impl TurnOptions {
    /// Whether an agent made for `other` serves these options too (the same model, thinking
    /// level, cap, trust and images).
    pub(crate) fn same_agent(&self, other: &Self) -> bool {
        (
            &self.model,
            &self.thinking,
            &self.budget,
            self.untrusted,
            &self.images,
        ) == (
            &other.model,
            &other.thinking,
            &other.budget,
            other.untrusted,
            &other.images,
        )
    }
}

/// The refusal of a turn under an agent that does not exist.
pub(crate) fn unknown_agent(agent: &str) -> crate::protocol::MethodError {
    crate::protocol::MethodError::new(
        crate::protocol::ErrorCode::NotFound,
        format!(
            "no agent '{agent}' is configured; use agent:main:… or add [agents.{agent}] to config.toml"
        ),
    )
}
