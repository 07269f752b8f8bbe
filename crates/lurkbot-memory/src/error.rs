//! Why the memory index failed.

/// A memory index failure.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The database failed.
    #[error("memory index: {0}; `lurkbot memory index --rebuild` makes it anew")]
    Sqlite(#[from] rusqlite::Error),
    /// A folder or file failed.
    #[error(transparent)]
    Io(#[from] lurkbot_core::CoreError),
}
