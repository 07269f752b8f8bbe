//! Stopping without dropping a turn (ARCHITECTURE.md §6): when the gateway is told to stop
//! (SIGTERM, `systemctl restart`, Ctrl-C, the `stop` future), it first drains — the turns that
//! run get `[gateway] shutdown_grace_secs` (20) to finish and reach their clients, while new
//! work is refused as "the gateway is stopping" (HTTP 503 with `Retry-After`, `UNAVAILABLE` on
//! the WebSocket) — and only then stops, cancelling what still runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::protocol::{ErrorCode, MethodError};
use crate::state::AppState;

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
    grace: Mutex<Option<Duration>>,
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

impl AppState {
    /// Uses `grace` instead of `[gateway] shutdown_grace_secs` when stopping (an embedder's
    /// choice: the tests stop at once).
    pub fn set_shutdown_grace(&self, grace: Duration) {
        if let Ok(mut g) = self.host.drain.grace.lock() {
            *g = Some(grace);
        }
    }

    /// How long running turns may finish once the gateway is told to stop.
    pub(crate) fn shutdown_grace(&self) -> Duration {
        let set = self.host.drain.grace.lock().ok().and_then(|g| *g);
        set.unwrap_or_else(|| Duration::from_secs(self.config().gateway.shutdown_grace_secs))
    }

    /// Turns that run now, the users' included.
    fn running_turns(&self) -> usize {
        self.host.running_turns() + self.users.as_ref().map_or(0, |u| u.running_turns())
    }
}

/// Refuses new turns, then waits (at most the grace) until none runs.
pub(crate) async fn drain(state: AppState) {
    state.host.drain.begin();
    let grace = state.shutdown_grace();
    let running = state.running_turns();
    if running == 0 || grace.is_zero() {
        return;
    }
    tracing::info!(
        running,
        grace_secs = grace.as_secs(),
        "stopping: running turns may finish; new work is refused"
    );
    let deadline = tokio::time::Instant::now() + grace;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let running = state.running_turns();
        if running == 0 {
            tracing::info!("stopping: every running turn finished");
            return;
        }
        if left.is_zero() {
            tracing::warn!(
                running,
                "stopping: turns still running after the grace are cancelled"
            );
            return;
        }
        tokio::time::sleep(left.min(Duration::from_millis(50))).await;
    }
}
