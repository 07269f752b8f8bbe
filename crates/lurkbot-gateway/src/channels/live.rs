//! One running channel: the platform and its status (`channels.status`).

use std::sync::{Arc, Mutex};

use lurkbot_channels::{Channel, ChannelStatus};

/// One running channel.
pub(crate) struct Live {
    pub(crate) channel: Arc<dyn Channel>,
    pub(crate) status: Mutex<ChannelStatus>,
}

impl Live {
    /// `channel`, `starting`.
    pub(crate) fn new(channel: Arc<dyn Channel>) -> Self {
        Self {
            channel,
            status: Mutex::new(ChannelStatus {
                state: "starting".into(),
                ..ChannelStatus::default()
            }),
        }
    }

    /// Changes the status.
    pub(crate) fn update(&self, f: impl FnOnce(&mut ChannelStatus)) {
        if let Ok(mut status) = self.status.lock() {
            f(&mut status);
        }
    }

    /// The platform.
    pub(crate) fn channel(&self) -> &dyn Channel {
        &*self.channel
    }

    /// `n` more messages went out.
    pub(crate) fn count_sent(&self, n: usize) {
        self.update(|s| s.sent += n as u64);
    }

    /// A send failed: the status shows why.
    pub(crate) fn note_error(&self, text: &str) {
        self.update(|s| s.last_error = Some(text.to_string()));
    }

    /// `starting`, `standby`, `connected`, `retrying` or `failed`.
    pub(crate) fn set_state(&self, state: &str) {
        self.update(|s| s.state = state.to_string());
    }
}
