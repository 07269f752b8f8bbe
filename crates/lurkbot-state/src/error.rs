//! What can go wrong with the state store.

/// A state store failure.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The store's folder could not be made.
    #[error(transparent)]
    Core(#[from] lurkbot_core::CoreError),
    /// The database failed (disk full, a locked or damaged file).
    #[error("the state store failed: {0} (state/state.sqlite in the home)")]
    Db(#[from] rusqlite::Error),
    /// The PostgreSQL database failed or could not be reached (the message names it without
    /// its password).
    #[error("the state database failed: {0}")]
    Postgres(String),
    /// `[state] url` or `LURKBOT_STATE_URL` cannot be used.
    #[error("{0}")]
    Url(String),
    /// A move between backends that cannot be made (`state migrate`).
    #[error("{0}")]
    Migrate(String),
    /// A record that should be JSON is not.
    #[error("a state record is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The store was written by a newer LurkBot.
    #[error(
        "the state store has schema version {found}, newer than this LurkBot's {supported}: upgrade LurkBot"
    )]
    Newer {
        /// The store's version.
        found: i64,
        /// This build's.
        supported: i64,
    },
    /// A gateway id that cannot name its lock file.
    #[error(
        "the gateway id '{0}' is not valid: use letters, digits, '-', '_' and '.' ([gateway] id in config.toml)"
    )]
    BadOwner(String),
    /// Another gateway on this home runs under the same id.
    #[error(
        "another gateway on this home already runs as '{0}': give each its own [gateway] id, or leave it unset"
    )]
    OwnerTaken(String),
    /// The file of writes waiting to be recorded failed (`state/deferred/` in the home).
    #[error("the deferred writes' file failed: {0} (state/deferred in the home)")]
    Deferred(#[source] std::io::Error),
    /// No such record.
    #[error("no {what} '{id}'")]
    NotFound {
        /// A turn or an outbox entry.
        what: &'static str,
        /// Its id.
        id: String,
    },
}
