//! Receiving one channel: each batch recorded before the platform is told it arrived, then
//! answered in order; failures back off and show in the channel's status. Beside it, the
//! channel's liveness is watched (§6.1.2): a permanent failure, or a stale spell past its
//! grace, is told to the owner on another channel.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_channels::ChannelError;

use crate::channels::context::ChannelContext;
use crate::channels::live::Live;

/// Longest pause between failed receives.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How often a channel's liveness is looked at (at most).
const LIVENESS_EVERY: Duration = Duration::from_secs(15);

/// Receives until the gateway stops, watching the channel's liveness meanwhile.
pub(crate) async fn receive_loop(state: ChannelContext, live: Arc<Live>) {
    tokio::select! {
        () = receive(&state, &live) => {}
        () = watch_liveness(&state, &live) => {}
    }
}

/// Tells the owner when the channel's own liveness check has found it stale for too long.
async fn watch_liveness(state: &ChannelContext, live: &Live) {
    use crate::channels::alert::{Notice, StaleWatch, grace, tell_back, tell_stopped};
    let mut watch = StaleWatch::default();
    let name = live.channel.name();
    loop {
        // Often enough for the grace in force (a short one is looked at every second).
        let grace = grace(state, name);
        let every = LIVENESS_EVERY.min(grace / 2).max(Duration::from_secs(1));
        tokio::time::sleep(every).await;
        let stale = live.channel.stale();
        let now = std::time::Instant::now();
        match watch.observe(stale.is_some(), now, grace) {
            Notice::Stale => tell_stopped(state, name, &stale.unwrap_or_default()).await,
            Notice::Back => tell_back(state, name).await,
            Notice::None => {}
        }
    }
}

/// Receives; failures back off (a platform's `retry_after` is honoured), are shown in the
/// channel's status, and a permanent one is told to the owner once.
async fn receive(state: &ChannelContext, live: &Arc<Live>) {
    let mut told = false;
    let mut backoff = Duration::from_secs(1);
    loop {
        match live.channel.receive().await {
            Ok(batch) => {
                backoff = Duration::from_secs(1);
                told = false;
                live.update(|s| {
                    s.state = "connected".into();
                    s.received += batch.len() as u64;
                });
                live.note_receive();
                lurkbot_core::metrics::CHANNEL_MESSAGES
                    .add(&[live.channel.name(), "in"], batch.len() as f64);
                // Recorded before the platform is told they arrived; one served again after
                // a crash is recorded already, and not answered twice.
                let Some(batch) = crate::channels::inbound::record(state, live, batch) else {
                    tokio::time::sleep(backoff).await;
                    continue;
                };
                live.channel.acknowledge();
                if !batch.is_empty() {
                    // One task per batch: its messages are answered in order, and receiving
                    // goes on meanwhile.
                    let (state, live) = (state.clone(), live.clone());
                    tokio::spawn(async move {
                        for message in batch {
                            crate::channels::handle::handle(&state, &live, message).await;
                        }
                    });
                }
            }
            Err(e) => {
                let wait = match &e {
                    ChannelError::RetryAfter(wait, _) => *wait,
                    _ => backoff,
                };
                backoff = (backoff * 2).min(MAX_BACKOFF);
                let permanent = matches!(e, ChannelError::Permanent(_));
                let reason = match &e {
                    _ if live.channel.stale().is_some() => "stale",
                    ChannelError::Permanent(_) => "failed",
                    ChannelError::RetryAfter(..) => "rate_limited",
                    ChannelError::Transient(_) => "error",
                };
                lurkbot_core::metrics::CHANNEL_RECONNECTS.inc(&[live.channel.name(), reason]);
                tracing::warn!(channel = live.channel.name(), error = %e, "channel receive failed");
                live.update(|s| {
                    s.state = if permanent { "failed" } else { "retrying" }.into();
                    s.last_error = Some(e.to_string());
                });
                if permanent && !told {
                    told = true;
                    crate::channels::alert::tell_stopped(
                        state,
                        live.channel.name(),
                        &e.to_string(),
                    )
                    .await;
                }
                tokio::time::sleep(if permanent { MAX_BACKOFF } else { wait }).await;
            }
        }
    }
}
