//! `status`: the gateway's headline figures — its id and state store, the model, sessions,
//! approvals, connections, nodes, the last heartbeat, what it keeps in memory and the outbox.

use serde_json::{Value, json};

use crate::state::AppState;

/// The `status` method's payload.
pub(crate) fn status(state: &AppState) -> Value {
    let config = state.config();
    let model = lurkbot_agent::setup::models(None, &config)
        .ok()
        .and_then(|m| m.first().map(ToString::to_string));
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "gatewayId": state.host.store().map(lurkbot_state::Store::owner),
        "stateStore": state.host.store().map(lurkbot_state::Store::backend),
        "sharedEvents": {
            "on": state.host.store().is_some_and(lurkbot_state::Store::shares_events),
            "dropped": state.hub.sharing.dropped(),
        },
        "model": model,
        "irc": {"configured": lurkbot_term::IrcSessions::configured(&state.home)},
        "liveSessions": state.host.live_sessions(),
        "pendingApprovals": state.approver.pending(),
        "connections": state.connections(),
        "nodes": state.nodes.summary(),
        "heartbeat": state.autonomy.last_heartbeat(),
        "retained": retained(state),
        "outbox": crate::channels::outbox::summary(&state.host),
        "plugins": state.host.plugins().statuses(),
    })
}

/// [`status`] as `state`'s caller may see it: the owner's (and an admin's) with the headline
/// figures of the metrics (ARCHITECTURE.md §6.4), which are every user's together.
pub(crate) fn status_for(state: &AppState) -> Value {
    let mut v = status(state);
    if state.user.is_none() {
        v["metrics"] = crate::ops::metrics::headline();
    }
    v
}

/// `status`: [`status`] with the managed browser's state (the method, the `gateway` tool).
pub(crate) async fn status_with_browser(state: &AppState) -> Value {
    let mut v = status_for(state);
    v["browser"] = browser_state(&state.host).await;
    v
}

/// What the gateway keeps in memory, counted, with the bounds of those that have one
/// (ARCHITECTURE.md §9): the session host's slots, agents, run records and sub-agents, the
/// hub's listeners, pending approvals, addresses with recent auth failures.
fn retained(state: &AppState) -> Value {
    let mut retained = state.host.retained();
    retained["hubListeners"] = json!(state.hub.listeners());
    retained["pendingApprovals"] = json!(state.approver.pending());
    retained["authFailureAddresses"] = json!(state.limiter.tracked());
    retained
}

/// Chromium's state: running, pid, tabs, memory of its processes, refused requests.
pub(crate) async fn browser_state(s: &crate::turns::host::SessionHost) -> Value {
    let config = s.config();
    let browser = lurkbot_agent::home_browser(&s.home, &config).await;
    let status = browser.status().await;
    let mut v = serde_json::to_value(&status).unwrap_or_default();
    v["enabled"] = json!(config.browser.enabled);
    v
}
