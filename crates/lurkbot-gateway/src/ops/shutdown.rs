//! Stopping without dropping a turn (ARCHITECTURE.md §6): when the gateway is told to stop
//! (SIGTERM, `systemctl restart`, Ctrl-C, the `stop` future), it first drains — the turns that
//! run get `[gateway] shutdown_grace_secs` (20) to finish and reach their clients, while new
//! work is refused (`turns/drain.rs`) — and only then stops, cancelling what still runs.

use std::time::Duration;

use crate::state::AppState;

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
        self.host.running_turns() + self.members.as_ref().map_or(0, |m| m.running_turns())
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
