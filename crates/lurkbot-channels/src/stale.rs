//! Why a channel's connection is not known to be alive (ARCHITECTURE.md §6.1.2): set by the
//! channel's own liveness check when a transport ping, keep-alive or probe fails, cleared when
//! the connection speaks again, and read by [`crate::Channel::stale`]. Cheap to clone: a
//! socket task and its channel share one.

use std::sync::{Arc, Mutex};

/// The stale reason, shared.
#[derive(Clone, Default)]
pub(crate) struct Stale(Arc<Mutex<Option<String>>>);

impl Stale {
    /// Stale for `why`, or alive again with `None`.
    pub(crate) fn set(&self, why: Option<String>) {
        if let Ok(mut stale) = self.0.lock() {
            *stale = why;
        }
    }

    /// Why the connection is stale, if it is.
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().ok()?.clone()
    }
}
