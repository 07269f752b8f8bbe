//! Telling the owner when a channel cannot go on by itself (ARCHITECTURE.md §6.1.2): a
//! permanent failure (a revoked token, WhatsApp logging the device out), or a connection its
//! liveness check has found dead for longer than `[channels.<name>] stale_alert_after` — and
//! once more when it is back. The notice goes where the owner last talked when that is another
//! running channel, else to the web UI's main session — never through the channel that is
//! down — and through the gate like every message.

use std::time::{Duration, Instant};

use lurkbot_agent::Outbound;
use lurkbot_agent::gate::Asker;
use lurkbot_core::SessionKey;

use crate::channels::context::ChannelContext;

/// How long a channel may stay stale (its liveness check failing while it reconnects) before
/// the owner is told, unless `stale_alert_after` says otherwise.
pub(crate) const TELL_STALE_AFTER: Duration = Duration::from_secs(5 * 60);

/// `[channels.<name>] stale_alert_after` in force now.
pub(crate) fn grace(state: &ChannelContext, channel: &str) -> Duration {
    state
        .config()
        .channels
        .get(channel)
        .and_then(|c| lurkbot_core::parse_period_ms(&c.stale_alert_after))
        .map_or(TELL_STALE_AFTER, Duration::from_millis)
}

/// Tells the owner that `channel` stopped, and why (what to do is in `why`).
pub(crate) async fn tell_stopped(state: &ChannelContext, channel: &str, why: &str) {
    tell_owner(
        state,
        channel,
        format!("⚠ The {channel} channel stopped: {why}"),
    )
    .await;
}

/// Tells the owner that `channel`, which they were told had stopped, is back.
pub(crate) async fn tell_back(state: &ChannelContext, channel: &str) {
    tell_owner(state, channel, format!("✓ The {channel} channel is back.")).await;
}

/// Tells the owner `text` about `channel`, elsewhere than on it.
async fn tell_owner(state: &ChannelContext, channel: &str, text: String) {
    let last = state
        .host
        .last_route
        .lock()
        .map(|l| l.0.clone())
        .unwrap_or_default();
    if last == channel || !state.host.channels.has(&last) {
        // The web UI's main session, never inside its running turn (a tool call would be
        // split from its result): after it.
        let slot = state.host.slot(&SessionKey::main());
        let _free = slot.agent.lock().await;
        match state.host.post_to_webchat(&text) {
            Ok(()) => tracing::info!(channel, "the owner was told of the channel"),
            Err(e) => tracing::warn!(
                channel,
                error = e.as_str(),
                "the owner could not be told of the channel"
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
            "the owner was told of the channel"
        ),
        Err(e) => tracing::warn!(
            channel,
            error = e.as_str(),
            "the owner could not be told of the channel"
        ),
    }
}

/// What a look at a channel's liveness calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    /// Nothing to say.
    None,
    /// Stale past its grace: tell the owner.
    Stale,
    /// Alive again after the owner was told: tell them it is back.
    Back,
}

/// Follows one channel's liveness: says when a stale spell has lasted its grace (once a
/// spell), and when a spell the owner was told of ends.
#[derive(Debug, Default)]
pub(crate) struct StaleWatch {
    since: Option<Instant>,
    told: bool,
}

impl StaleWatch {
    /// Notes whether the channel is stale `now`, with `grace` before the owner is told.
    pub(crate) fn observe(&mut self, stale: bool, now: Instant, grace: Duration) -> Notice {
        if !stale {
            let told = self.told;
            *self = Self::default();
            return if told { Notice::Back } else { Notice::None };
        }
        let since = *self.since.get_or_insert(now);
        if self.told || now.duration_since(since) < grace {
            return Notice::None;
        }
        self.told = true;
        Notice::Stale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = TELL_STALE_AFTER;

    #[test]
    fn a_stale_spell_is_told_once_after_its_grace_and_its_end_too() {
        let start = Instant::now();
        let mut watch = StaleWatch::default();
        let mut at =
            |secs: u64, stale: bool| watch.observe(stale, start + Duration::from_secs(secs), GRACE);
        assert_eq!(at(0, true), Notice::None);
        assert_eq!(at(299, true), Notice::None);
        assert_eq!(at(300, true), Notice::Stale);
        assert_eq!(at(900, true), Notice::None, "told once a spell");
        assert_eq!(at(1200, false), Notice::Back);
        assert_eq!(at(1215, false), Notice::None);
        // A new spell: its own grace, told again.
        assert_eq!(at(1500, true), Notice::None);
        assert_eq!(at(1800, true), Notice::Stale);
    }

    #[test]
    fn a_channel_alive_again_before_its_grace_is_never_told() {
        let start = Instant::now();
        let mut watch = StaleWatch::default();
        let short = Duration::from_secs(30);
        let mut at =
            |secs: u64, stale: bool| watch.observe(stale, start + Duration::from_secs(secs), short);
        assert_eq!(at(0, true), Notice::None);
        assert_eq!(at(20, false), Notice::None);
        assert_eq!(at(40, true), Notice::None);
        assert_eq!(
            at(70, true),
            Notice::Stale,
            "the configured grace, not the default"
        );
    }
}
