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
    /// The embedder failed or is not usable; keyword search still works.
    #[error("memory embedder {id}: {message}")]
    Embedder {
        /// The embedder (`openai:<model>`, `local:<folder>`).
        id: String,
        /// What went wrong and what to do.
        message: String,
    },
}
