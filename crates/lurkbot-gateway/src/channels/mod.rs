//! The messaging channels the gateway runs (ARCHITECTURE.md §6.1): each configured
//! `[channels.<name>]` with its credentials in the home's `.env` is started with the gateway,
//! and its messages go through access ([`lurkbot_channels::access`]: pairing codes to
//! strangers, nothing to the model), routing (the binding's agent, the §5 session key) and a
//! turn whose reply is delivered back in the platform's chunks with its retry policy. The
//! `message` tool, cron `announce` and the heartbeat deliver through `ChannelSet::deliver`.
//!
//! The loop is written once for every channel: `adapters.rs` makes the platform's adapter (a
//! [`lurkbot_channels::Channel`], which only speaks its platform); `lease.rs` (one gateway
//! receives it) → `receive.rs` (each batch recorded by `inbound.rs` before the platform is
//! told it arrived) → `handle.rs` (access, routing, the turn) → `outbox.rs` (sent once).

pub(crate) mod adapters;
pub(crate) mod alert;
pub(crate) mod context;
pub(crate) mod handle;
pub(crate) mod inbound;
pub(crate) mod lease;
pub(crate) mod live;
pub(crate) mod media;
pub(crate) mod outbox;
pub(crate) mod receive;
pub(crate) mod set;
pub(crate) mod voice;

use std::sync::Arc;

use crate::channels::context::ChannelContext;
use crate::channels::live::Live;

/// Starts every enabled channel; the receive loops' handles (aborted when the gateway stops).
pub(crate) fn start(state: &ChannelContext) -> Vec<tokio::task::JoinHandle<()>> {
    let config = state.config();
    let mut tasks = Vec::new();
    for (name, settings) in &config.channels {
        if !settings.enabled {
            continue;
        }
        // LurkBot's own, or one an enabled plugin provides (registered when it was read).
        let Some(name) = lurkbot_core::known_channel(name) else {
            continue;
        };
        let live = match crate::channels::adapters::build(state, name) {
            Ok(channel) => Arc::new(Live::new(channel)),
            Err(e) => {
                tracing::warn!(channel = name, error = e.as_str(), "channel not started");
                state.host.channels.refuse(name, e);
                continue;
            }
        };
        state.host.channels.insert(name, live.clone());
        tracing::info!(channel = name, "channel started");
        tasks.push(tokio::spawn(crate::channels::lease::hold_then_receive(
            state.clone(),
            live,
        )));
    }
    tasks
}
