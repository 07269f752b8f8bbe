//! A channel's messages recorded before the platform is told they arrived (ARCHITECTURE.md
//! §6.3): each with its source id in the inbound records, once; those recorded and not handled
//! when the gateway stopped are handled when their channel starts again.

use lurkbot_channels::Inbound;
use serde_json::Value;

use crate::channels::context::ChannelContext;
use crate::channels::live::Live;

/// Records a received batch in the inbound records: the messages not recorded before, or
/// `None` when the store failed (nothing is acknowledged; the platform serves them again).
pub(crate) fn record(
    state: &ChannelContext,
    live: &Live,
    batch: Vec<Inbound>,
) -> Option<Vec<Inbound>> {
    let Some(store) = state.host.store() else {
        for message in &batch {
            live.channel().recorded(message, true);
        }
        return Some(batch);
    };
    let mut fresh = Vec::with_capacity(batch.len());
    for message in batch {
        let Some(source) = message.source_id() else {
            live.channel().recorded(&message, true);
            fresh.push(message);
            continue;
        };
        let payload = serde_json::to_value(&message).unwrap_or(Value::Null);
        match store.receive(&source, live.channel().name(), &payload) {
            Ok(true) => {
                live.channel().recorded(&message, true);
                fresh.push(message);
            }
            Ok(false) => {
                live.channel().recorded(&message, false);
                tracing::info!(
                    channel = live.channel().name(),
                    source = source.as_str(),
                    "message served again: recorded before, not answered twice"
                );
            }
            Err(e) => {
                tracing::error!(channel = live.channel().name(), error = %e, "message not recorded: not acknowledged");
                live.note_error(&e.to_string());
                return None;
            }
        }
    }
    Some(fresh)
}

/// Marks an inbound message handled without a turn.
pub(crate) fn handled(state: &ChannelContext, message: &Inbound, note: &str) {
    if let Some(store) = state.host.store()
        && let Some(source) = message.source_id()
        && let Err(e) = store.handled(&source, note)
    {
        tracing::warn!(error = %e, "inbound record not updated");
    }
}
