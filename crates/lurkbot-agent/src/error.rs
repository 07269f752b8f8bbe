//! Agent failures.

use lurkbot_llm::LlmError;

/// What stops a turn.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model provider failed (after rotation, retries and failover).
    #[error("{0}")]
    Model(#[from] LlmError),
    /// A session file could not be read or written.
    #[error("session store: {0}")]
    Store(String),
    /// The configuration is unusable.
    #[error("{0}")]
    Config(String),
}
