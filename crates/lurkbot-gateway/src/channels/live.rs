//! One running channel: the platform and its status (`channels.status`).

use std::sync::{Arc, Mutex};

use lurkbot_channels::{Channel, ChannelStatus};

/// One running channel.
pub(crate) struct Live {
    pub(crate) channel: Arc<dyn Channel>,
    pub(crate) status: Mutex<ChannelStatus>,
    /// When the channel last received (a batch, or an empty one: a sign of life), in Unix ms.
    last_receive_ms: std::sync::atomic::AtomicU64,
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
            last_receive_ms: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The channel received (`lurkbot_channel_last_receive_seconds`).
    pub(crate) fn note_receive(&self) {
        self.last_receive_ms
            .store(lurkbot_core::now_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    /// When it last received, in Unix seconds; `None` before it first did.
    pub(crate) fn last_receive_seconds(&self) -> Option<f64> {
        let ms = self
            .last_receive_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        (ms > 0).then(|| ms as f64 / 1000.0)
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
