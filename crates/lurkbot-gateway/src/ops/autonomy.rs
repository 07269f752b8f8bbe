//! What the timers (`scheduler.rs`) share with the methods: the scheduler's wake-up, its
//! state, the last heartbeat.

use std::sync::Mutex;

use lurkbot_agent::heartbeat::HeartbeatEvent;
use tokio::sync::Notify;

/// What the timers share with the methods.
#[derive(Default)]
pub struct Autonomy {
    /// Wakes the scheduler (a job was added, changed or asked to run).
    pub(crate) wake: Notify,
    /// The last heartbeat's event.
    pub(crate) last_heartbeat: Mutex<Option<HeartbeatEvent>>,
    /// Whether this gateway runs the timers: `starting`, `running`, or `standby` (another
    /// gateway holds the scheduler's lease).
    state: Mutex<&'static str>,
}

impl Autonomy {
    /// `starting`, `running` or `standby` (`cron.status` shows it).
    pub fn scheduler_state(&self) -> &'static str {
        match self.state.lock().map(|s| *s) {
            Ok("") | Err(_) => "starting",
            Ok(state) => state,
        }
    }

    /// Records whether this gateway runs the timers (`starting`, `running`, `standby`).
    pub(crate) fn set_state(&self, state: &'static str) {
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
    }

    /// The last heartbeat, if one ran.
    pub fn last_heartbeat(&self) -> Option<HeartbeatEvent> {
        self.last_heartbeat.lock().ok().and_then(|h| h.clone())
    }
}
