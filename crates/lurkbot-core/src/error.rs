//! Errors of the core crate that are not about a single concern.

use std::path::PathBuf;

/// A filesystem failure with the path it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// Reading, writing or creating `path` failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done ("write", "create directory", …).
        action: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// No home directory could be determined.
    #[error("cannot determine the LurkBot home: set LURKBOT_HOME or pass --home DIR")]
    NoHome,
    /// A name or value that cannot be used (the message says which and why).
    #[error("{0}")]
    Invalid(String),
}

impl CoreError {
    /// Wraps an I/O error with what was being done to which path.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
