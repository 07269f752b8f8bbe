//! Telling the owner when a channel cannot go on by itself (ARCHITECTURE.md §6.1.2): a
//! permanent failure (a revoked token, WhatsApp logging the device out), or a connection its
//! liveness check has found dead for longer than it takes to reconnect. The notice goes where
//! the owner last talked when that is another running channel, else to the web UI's main
//! session — never through the channel that is down — and through the gate like every message.

use std::time::{Duration, Instant};

use lurkbot_agent::Outbound;
use lurkbot_agent::gate::Asker;
use lurkbot_core::SessionKey;

use crate::channels::context::ChannelContext;

/// How long a channel may stay stale (its liveness check failing while it reconnects) before
/// the owner is told.
pub(crate) const TELL_STALE_AFTER: Duration = Duration::from_secs(5 * 60);

/// Tells the owner that `channel` stopped, and why (what to do is in `why`).
pub(crate) async fn tell_owner(state: &ChannelContext, channel: &str, why: &str) {
    let last = state
        .host
        .last_route
        .lock()
        .map(|l| l.0.clone())
        .unwrap_or_default();
    let text = format!("⚠ The {channel} channel stopped: {why}");
    if last == channel || !state.host.channels.has(&last) {
        // The web UI's main session, never inside its running turn (a tool call would be
        // split from its result): after it.
        let slot = state.host.slot(&SessionKey::main());
        let _free = slot.agent.lock().await;
        match state.host.post_to_webchat(&text) {
            Ok(()) => tracing::info!(channel, "the owner was told the channel stopped"),
            Err(e) => tracing::warn!(
                channel,
                error = e.as_str(),
                "the owner could not be told the channel stopped"
            ),
        }
        return;
    }
    let notice = Outbound {
        channel: last,
        to: None,
        text,
        from: SessionKey::main(),
        // The gateway's own notice about a channel the owner configured: the owner's.
        asker: Asker::Owner,
    };
    match state.host.deliver(notice).await {
        Ok(to) => tracing::info!(
            channel,
            to = to.as_str(),
            "the owner was told the channel stopped"
        ),
        Err(e) => tracing::warn!(
            channel,
            error = e.as_str(),
            "the owner could not be told the channel stopped"
        ),
    }
}

/// Follows one channel's liveness: says when a stale spell has lasted long enough to tell the
/// owner (once a spell).
#[derive(Debug, Default)]
pub(crate) struct StaleWatch {
    since: Option<Instant>,
    told: bool,
}

impl StaleWatch {
    /// Notes whether the channel is stale `now`; true when the owner should be told now.
    pub(crate) fn observe(&mut self, stale: bool, now: Instant) -> bool {
        if !stale {
            *self = Self::default();
            return false;
        }
        let since = *self.since.get_or_insert(now);
        if self.told || now.duration_since(since) < TELL_STALE_AFTER {
            return false;
        }
        self.told = true;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_spell_is_told_once_after_its_grace() {
        let start = Instant::now();
        let mut watch = StaleWatch::default();
        assert!(!watch.observe(true, start));
        assert!(!watch.observe(true, start + TELL_STALE_AFTER - Duration::from_secs(1)));
        assert!(watch.observe(true, start + TELL_STALE_AFTER));
        assert!(
            !watch.observe(true, start + TELL_STALE_AFTER * 3),
            "told once a spell"
        );
        // Alive again, then a new spell: its own grace, told again.
        assert!(!watch.observe(false, start + TELL_STALE_AFTER * 4));
        let again = start + TELL_STALE_AFTER * 5;
        assert!(!watch.observe(true, again));
        assert!(watch.observe(true, again + TELL_STALE_AFTER));
    }

    #[test]
    fn a_channel_alive_again_before_the_grace_is_never_told() {
        let start = Instant::now();
        let mut watch = StaleWatch::default();
        assert!(!watch.observe(true, start));
        assert!(!watch.observe(false, start + Duration::from_secs(60)));
        assert!(!watch.observe(true, start + TELL_STALE_AFTER + Duration::from_secs(1)));
    }
}
