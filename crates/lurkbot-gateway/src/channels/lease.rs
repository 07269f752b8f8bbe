//! One gateway receives each channel (ARCHITECTURE.md §6.3): before a channel's receive loop
//! starts, its gateway takes the lease `channel:<name>` in the state store. Another gateway on
//! the home configured with the same channel sends through it (replies of the turns it runs)
//! but does not receive: it stands by, shown as `standby` in `channels.status`, and takes the
//! lease — and the receiving — once its holder stops or dies. Telegram refuses a second
//! poller, IRC a second nick; Discord and Slack would deliver every message twice.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_channels::Inbound;

use crate::channels::context::ChannelContext;
use crate::channels::live::Live;

/// Waits for the channel's lease, then replays what was recorded and not handled, then
/// receives until the gateway stops.
pub(crate) async fn hold_then_receive(state: ChannelContext, live: Arc<Live>) {
    if let Some(store) = state.host.store().cloned() {
        let lease = format!("channel:{}", live.channel().name());
        let mut told = false;
        loop {
            match store.take_lease(&lease) {
                Ok(true) => break,
                Ok(false) => {
                    if !told {
                        let holder = store.lease_holder(&lease).ok().flatten();
                        tracing::info!(
                            channel = live.channel().name(),
                            holder = holder.as_deref().unwrap_or("another gateway"),
                            "channel received by another gateway: standing by"
                        );
                        live.set_state("standby");
                        told = true;
                    }
                }
                Err(e) => {
                    tracing::warn!(channel = live.channel().name(), error = %e, "channel lease not taken");
                    live.note_error(&e.to_string());
                }
            }
            tokio::time::sleep(Duration::from_millis(lurkbot_state::LEASE_RENEW_MS)).await;
        }
        if told {
            tracing::info!(
                channel = live.channel().name(),
                "channel taken over: receiving here"
            );
            live.set_state("starting");
        }
    }
    replay(&state, &live);
    crate::channels::receive::receive_loop(state, live).await;
}

/// Handles again the messages recorded and not handled when the gateway stopped.
fn replay(state: &ChannelContext, live: &Arc<Live>) {
    let Some(store) = state.host.store() else {
        return;
    };
    let open = store.unhandled(live.channel().name()).unwrap_or_else(|e| {
        tracing::error!(error = %e, "recorded messages not read");
        Vec::new()
    });
    let batch: Vec<Inbound> = open
        .iter()
        .filter_map(|r| Inbound::from_record(&r.payload))
        .collect();
    if batch.is_empty() {
        return;
    }
    tracing::info!(
        channel = live.channel().name(),
        messages = batch.len(),
        "handling messages received before a restart"
    );
    let (state, live) = (state.clone(), live.clone());
    tokio::spawn(async move {
        for message in batch {
            crate::channels::handle::handle(&state, &live, message).await;
        }
    });
}
