//! OpenClaw's `hello-ok` and the state it snapshots: `health` (also a method and the event
//! pushed after `hello-ok`) and `presence` (this gateway, as `system-presence` answers).

use lurkbot_agent::Sessions;
use serde_json::{Value, json};

use crate::protocol::{Grants, MAX_PAYLOAD, ProtocolVersion, TICK_INTERVAL_MS};
use crate::state::AppState;

/// Most sessions `health` lists as recent.
const RECENT_SESSIONS: usize = 5;

/// The `hello-ok` payload of OpenClaw's `HelloOk` schema: server, features, a snapshot of
/// presence and health, the connection's role and scopes, and the limits.
pub(crate) fn hello(
    state: &AppState,
    version: ProtocolVersion,
    conn_id: &str,
    grants: &Grants,
) -> Value {
    let config = state.config();
    let model_configured = lurkbot_agent::setup::models(None, &config).is_ok();
    json!({
        "type": "hello-ok",
        "protocol": version.number(),
        "server": {"version": env!("CARGO_PKG_VERSION"), "connId": conn_id},
        "features": {"methods": super::names(), "events": super::EVENTS},
        "snapshot": {
            "presence": presence(state),
            "health": health(state),
            "stateVersion": {"presence": 1, "health": 1},
            "uptimeMs": lurkbot_core::now_ms().saturating_sub(state.started_ms),
            "configPath": state.home.join("config.toml").display().to_string(),
            "stateDir": state.home.root().display().to_string(),
            "sessionDefaults": {
                "defaultAgentId": "main",
                "modelConfigured": model_configured,
                "mainKey": "main",
                "mainSessionKey": lurkbot_core::SessionKey::main().as_str(),
                "scope": "per-sender",
            },
            "authMode": if state.token.is_some() { "token" } else { "none" },
        },
        "auth": {"role": "operator", "scopes": grants.names()},
        "policy": {
            "maxPayload": MAX_PAYLOAD,
            "maxBufferedBytes": MAX_PAYLOAD * 2,
            "tickIntervalMs": TICK_INTERVAL_MS,
        },
    })
}

/// OpenClaw's health snapshot: the agents with their heartbeat and recent sessions.
pub(crate) fn health(state: &AppState) -> Value {
    let started = std::time::Instant::now();
    let config = state.config();
    let heartbeat = &config.heartbeat;
    let every_ms = lurkbot_core::parse_period_ms(&heartbeat.every);
    let mut agent_ids = vec!["main".to_string()];
    agent_ids.extend(config.agents.keys().filter(|id| *id != "main").cloned());
    let now = lurkbot_core::now_ms();
    let agents: Vec<Value> = agent_ids
        .iter()
        .map(|id| {
            json!({
                "agentId": id,
                "isDefault": id == "main",
                "heartbeat": {
                    "enabled": heartbeat.enabled,
                    "every": heartbeat.every,
                    "everyMs": every_ms,
                    "prompt": heartbeat.prompt.clone().unwrap_or_default(),
                    "target": heartbeat.target,
                    "ackMaxChars": 300,
                },
                "sessions": recent_sessions(state, id, now),
            })
        })
        .collect();
    let main_sessions = agents
        .first()
        .map(|a| a["sessions"].clone())
        .unwrap_or(Value::Null);
    json!({
        "ok": true,
        "ts": now,
        "durationMs": started.elapsed().as_millis() as u64,
        "channels": {},
        "channelOrder": [],
        "channelLabels": {},
        "heartbeatSeconds": every_ms.map_or(0, |ms| ms / 1000),
        "defaultAgentId": "main",
        "agents": agents,
        "sessions": main_sessions,
    })
}

/// `{path, count, recent: [{key, updatedAt, age}]}` for one agent.
fn recent_sessions(state: &AppState, agent: &str, now: u64) -> Value {
    let store = Sessions::open(&state.home, agent);
    let mut list: Vec<_> = store.list().unwrap_or_default().into_values().collect();
    list.sort_by_key(|e| std::cmp::Reverse(e.updated_ms));
    let recent: Vec<Value> = list
        .iter()
        .take(RECENT_SESSIONS)
        .map(|e| {
            json!({"key": e.key, "updatedAt": e.updated_ms,
                "age": now.saturating_sub(e.updated_ms)})
        })
        .collect();
    json!({
        "path": state.home.join(lurkbot_core::layout::SESSIONS).join(agent).display().to_string(),
        "count": list.len(),
        "recent": recent,
    })
}

/// The presence list: this gateway (OpenClaw lists its connected devices too; LurkBot
/// reports itself and the number of clients).
pub(crate) fn presence(state: &AppState) -> Vec<Value> {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    let clients = state.connections();
    vec![json!({
        "host": host,
        "version": env!("CARGO_PKG_VERSION"),
        "platform": std::env::consts::OS,
        "mode": "gateway",
        "reason": "self",
        "text": format!("Gateway: LurkBot {} · {clients} client(s)", env!("CARGO_PKG_VERSION")),
        "ts": lurkbot_core::now_ms(),
        "onlineSince": state.started_ms,
        "roles": ["gateway"],
    })]
}
