//! Running blocking work (archive I/O, feed parsing) off the async executor, so that a run's
//! timeout can fire meanwhile.

use crate::{CommandError, ErrorCode};

/// Runs blocking work (archives, feed parsing) on tokio's blocking pool so a timeout can fire meanwhile; the work
/// checks the run's cancel flag between chunks.
///
/// # Errors
/// The work's own error, or `Internal` if it panicked.
pub(crate) async fn run_blocking<T, F>(work: F) -> Result<T, CommandError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, CommandError> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        CommandError::new(
            ErrorCode::Internal,
            format!("the command stopped unexpectedly: {e}"),
        )
        .with_hint("this is a bug; please report it with the input if you can")
    })?
}

/// The error a cancelled run returns (the executor has already answered `Timeout`).
pub(crate) fn cancelled() -> CommandError {
    CommandError::new(ErrorCode::Timeout, "cancelled")
}
