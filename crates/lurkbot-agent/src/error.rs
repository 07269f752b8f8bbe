//! Agent failures, each with its cause kept as the error's source (the model is
//! `lurkbot-core`'s `CoreError`): callers can tell a damaged file from a full disk from a bad
//! setting, and the message still says what to do.

use std::path::PathBuf;

use lurkbot_llm::LlmError;

/// What stops a turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model provider failed (after rotation, retries and failover).
    #[error("{0}")]
    Model(#[from] LlmError),
    /// A session or approvals file could not be read or written.
    #[error("session store: cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `lock`, …).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An atomic write of a store file failed.
    #[error("session store: {0}")]
    Write(#[from] lurkbot_core::CoreError),
    /// A store file holds something LurkBot did not write.
    #[error("{} is damaged ({source}); move it away to start over", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: serde_json::Error,
    },
    /// A record could not be encoded (a bug: every record is plain data).
    #[error("session store: cannot encode {what}: {source}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// A lock was poisoned by a panic in another thread.
    #[error("session store: the {0} lock was poisoned by an earlier failure; restart LurkBot")]
    Poisoned(&'static str),
    /// A model name that is not `<provider>/<model>`.
    #[error("{source}")]
    InvalidModel {
        /// The name as configured.
        model: String,
        /// Why it is not usable.
        #[source]
        source: LlmError,
    },
    /// The configuration is unusable (no model, an unknown level or tool-policy entry); the
    /// message names the setting and the fix.
    #[error("{0}")]
    Config(String),
    /// A model call would pass a spending cap; it was not made.
    #[error("{0}")]
    BudgetExceeded(Box<crate::usage::BudgetExceeded>),
    /// The state store (PostgreSQL) holding the sessions failed.
    #[error("session store: {0}")]
    State(#[from] lurkbot_state::StateError),
}

impl From<Box<crate::usage::BudgetExceeded>> for AgentError {
    fn from(e: Box<crate::usage::BudgetExceeded>) -> Self {
        Self::BudgetExceeded(e)
    }
}

impl AgentError {
    /// Wraps an I/O error with what was being done to which path.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// Whether the setup is at fault (a usage error: fix the configuration), not the run.
    pub fn is_config(&self) -> bool {
        matches!(self, Self::Config(_) | Self::InvalidModel { .. })
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn store_errors_keep_their_cause() {
        let e = AgentError::io(
            "read",
            "/h/sessions/main/sessions.json",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert!(
            e.to_string()
                .contains("cannot read /h/sessions/main/sessions.json")
        );
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            source.map(std::io::Error::kind),
            Some(std::io::ErrorKind::PermissionDenied)
        );
        let damaged =
            serde_json::from_str::<serde_json::Value>("{").map_err(|source| AgentError::Damaged {
                path: "/h/s.json".into(),
                source,
            });
        let damaged = damaged.err().map(|e| (e.to_string(), e.source().is_some()));
        assert!(
            damaged.is_some_and(|(text, has_source)| text.contains("move it away") && has_source)
        );
        assert!(AgentError::Config("no model".into()).is_config());
        assert!(!AgentError::Poisoned("approvals").is_config());
    }
}
