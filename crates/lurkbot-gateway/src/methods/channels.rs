//! `channels.status` and `channels.pairing.approve|deny`.

use std::collections::BTreeMap;

use lurkbot_channels::ChannelStatus;
use lurkbot_channels::pairing::PairingStore;
use serde_json::{Value, json};

use crate::turns::host::SessionHost;

/// `channels.status`: each configured channel with its state and the pending pairings.
pub(crate) fn status(state: &SessionHost) -> Value {
    let config = state.config();
    let running: BTreeMap<String, ChannelStatus> = state.channels.statuses().into_iter().collect();
    let pending = PairingStore::open(&state.home)
        .pending(lurkbot_core::now_ms())
        .unwrap_or_default();
    let channels: Vec<Value> = config
        .channels
        .iter()
        .map(|(name, settings)| {
            let status = running.get(name).cloned().unwrap_or(ChannelStatus {
                state: if settings.enabled {
                    "not started"
                } else {
                    "disabled"
                }
                .into(),
                last_error: state.channels.refused(name),
                ..ChannelStatus::default()
            });
            json!({"name": name, "enabled": settings.enabled, "dmPolicy": settings.dm_policy,
                "state": status.state, "lastError": status.last_error,
                "received": status.received, "sent": status.sent,
                "pendingPairings": pending.iter().filter(|p| &p.channel == name).count(),
                "link": status.link})
        })
        .collect();
    json!({"channels": channels, "pendingPairings": pending,
        "outbox": crate::channels::outbox::summary(state)})
}

/// `channels.pairing.approve {channel, code}` and `channels.pairing.deny {channel, code}`.
/// A user of a shared gateway approves into the gateway's pairings, and the sender becomes
/// theirs (`user`: whose connection asks, `None` for the gateway's owner).
pub(crate) fn pairing(
    state: &SessionHost,
    user: Option<&str>,
    params: &Value,
    approve: bool,
) -> Result<Value, crate::protocol::MethodError> {
    use crate::protocol::{ErrorCode, MethodError};
    let text = |name: &str| {
        params
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| MethodError::invalid(format!("missing string parameter '{name}'")))
    };
    let (channel, code) = (text("channel")?, text("code")?);
    let gateway_home = match state.home.shared() {
        Some(root) => lurkbot_core::Home::open(root)
            .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?,
        None => state.home.clone(),
    };
    let store = PairingStore::open(&gateway_home);
    let now = lurkbot_core::now_ms();
    let done = if approve {
        store.approve_for(channel, code, now, user)
    } else if user.is_some() {
        return Err(MethodError::new(
            ErrorCode::Forbidden,
            "only the gateway's admin denies pairings",
        ));
    } else {
        store.deny(channel, code, now)
    };
    match done {
        Ok(p) => Ok(
            json!({"channel": p.channel, "sender": p.sender, "name": p.name,
            "approved": approve}),
        ),
        Err(e @ lurkbot_channels::pairing::PairingError::NotFound { .. }) => {
            Err(MethodError::new(ErrorCode::NotFound, e.to_string()))
        }
        Err(e) => Err(MethodError::new(ErrorCode::Unavailable, e.to_string())),
    }
}

/// `outbox.retry {id}`: a failed message goes back in line (sent within a minute).
pub(crate) fn retry(
    state: &SessionHost,
    params: &serde_json::Value,
) -> Result<serde_json::Value, crate::protocol::MethodError> {
    use crate::protocol::{ErrorCode, MethodError};
    let id = params
        .get("id")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| MethodError::invalid("missing string parameter 'id'"))?;
    let store = state
        .store()
        .ok_or_else(|| MethodError::new(ErrorCode::Unavailable, "no state store"))?;
    match store.retry_outgoing(id) {
        Ok(()) => {
            let (channels, store) = (state.channels.clone(), store.clone());
            let (id, home) = (id.to_string(), state.home.clone());
            tokio::spawn(async move {
                if let Ok(Some(message)) = store.outgoing(&id) {
                    let _ = channels.send_recorded(&home, &store, &message).await;
                }
            });
            Ok(serde_json::json!({"id": params["id"], "state": "pending"}))
        }
        Err(e @ lurkbot_state::StateError::NotFound { .. }) => {
            Err(MethodError::new(ErrorCode::NotFound, e.to_string()))
        }
        Err(e) => Err(MethodError::new(ErrorCode::Unavailable, e.to_string())),
    }
}
