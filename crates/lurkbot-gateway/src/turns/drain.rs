//! Whether the gateway drains (ARCHITECTURE.md §6): once it is told to stop, new work is
//! refused as "the gateway is stopping" (HTTP 503 with `Retry-After`, `UNAVAILABLE` on the
//! WebSocket) while running turns finish (`ops/shutdown.rs` waits for them).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::protocol::{ErrorCode, MethodError};

/// Seconds a refused client is told to wait before it tries again.
pub(crate) const RETRY_AFTER_SECS: u64 = 5;

/// What a refused client reads.
pub(crate) const STOPPING: &str = "the gateway is stopping: running turns are finishing and no new one starts here; try again in a few seconds";

/// Whether a gateway is draining. A user's session host follows the gateway's.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    draining: AtomicBool,
    /// The gateway's, for a user's host.
    follows: OnceLock<Arc<Drain>>,
    /// A grace set by the embedder (tests), in place of the setting.
    pub(crate) grace: Mutex<Option<Duration>>,
}

impl Drain {
    /// Whether new turns are refused.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst) || self.follows.get().is_some_and(|d| d.is_draining())
    }

    /// From now on, new turns are refused.
    pub(crate) fn begin(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// This drain follows `gateway`'s (a user's host on a shared gateway).
    pub(crate) fn follow(&self, gateway: &Arc<Drain>) {
        let _ = self.follows.set(Arc::clone(gateway));
    }

    /// The refusal of a new turn while draining.
    ///
    /// # Errors
    /// `UNAVAILABLE` saying the gateway is stopping.
    pub(crate) fn admit(&self) -> Result<(), MethodError> {
        if self.is_draining() {
            return Err(MethodError::new(ErrorCode::Unavailable, STOPPING));
        }
        Ok(())
    }
}
