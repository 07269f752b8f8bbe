//! Sessions in OpenClaw's shapes: `sessions.list` (its `SessionRow`s with the page facts),
//! `sessions.describe`, `sessions.subscribe` (turns on `sessions.changed` and `session.message`
//! for the connection, and answers the first page when given list parameters),
//! `sessions.reset` and `sessions.delete` (`key`, as OpenClaw names it).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lurkbot_agent::{SessionEntry, Sessions};
use lurkbot_core::SessionKey;
use serde_json::{Value, json};

use super::Conn;
use crate::protocol::{ErrorCode, MethodError};
use crate::turns::host::SessionHost;

/// Most rows one page holds.
const MAX_PAGE: usize = 500;

/// One `SessionRow`; `live` lists the sessions running a turn now (read once per answer).
fn row(live: &[String], entry: &SessionEntry) -> Value {
    let key = SessionKey::parse(&entry.key).ok();
    let agent = key.as_ref().map_or("main", SessionKey::agent_id);
    let group = key.as_ref().is_some_and(SessionKey::is_group);
    let (provider, model) = entry
        .model
        .as_deref()
        .and_then(|m| m.split_once('/'))
        .map_or((None, entry.model.clone()), |(p, m)| {
            (Some(p.to_string()), Some(m.to_string()))
        });
    let running = live.contains(&entry.key);
    let input = entry.usage.input_tokens;
    let output = entry.usage.output_tokens;
    json!({
        "key": entry.key,
        "sessionId": entry.session_id,
        "kind": if group { "group" } else { "direct" },
        "chatType": if group { "group" } else { "direct" },
        "agentId": agent,
        "displayName": entry.key.rsplit(':').next().unwrap_or(&entry.key),
        "isMain": key.as_ref() == Some(&SessionKey::main()),
        "isBackground": false,
        "createdAt": entry.created_ms,
        "updatedAt": entry.updated_ms,
        "lastActivityAt": entry.updated_ms,
        "inputTokens": input,
        "outputTokens": output,
        "totalTokens": input + output,
        "model": model,
        "modelProvider": provider,
        "hasActiveRun": running,
    })
}

/// The rows of `agentId` (default `main`), newest first, paged by `limit` and `offset`.
fn page(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let agent = params
        .get("agentId")
        .and_then(Value::as_str)
        .unwrap_or("main");
    let number = |name: &str| params.get(name).and_then(Value::as_u64).map(|n| n as usize);
    let limit = number("limit").unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let offset = number("offset").unwrap_or(0);
    let store = Sessions::open(&state.home, agent);
    let mut entries: Vec<SessionEntry> = store.list()?.into_values().collect();
    entries.sort_by_key(|e| std::cmp::Reverse(e.updated_ms));
    let total = entries.len();
    let live = state.live_sessions();
    let rows: Vec<Value> = entries
        .iter()
        .skip(offset)
        .take(limit)
        .map(|e| row(&live, e))
        .collect();
    let next = offset + rows.len();
    let config = state.config();
    let model = lurkbot_agent::setup::models(None, &config)
        .ok()
        .and_then(|m| m.first().map(ToString::to_string));
    Ok(json!({
        "ts": lurkbot_core::now_ms(),
        "path": state.home.join(lurkbot_core::layout::SESSIONS).join(agent).display().to_string(),
        "count": rows.len(),
        "totalCount": total,
        "limitApplied": limit,
        "offset": offset,
        "nextOffset": if next < total { json!(next) } else { Value::Null },
        "hasMore": next < total,
        "defaults": {"model": model},
        "sessions": rows,
    }))
}

/// `sessions.list`.
pub(super) fn list(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    page(state, params)
}

/// `sessions.describe {key}` → `{session}`.
pub(super) fn describe(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = key_param(params)?;
    let entry = Sessions::open(&state.home, key.agent_id())
        .list()?
        .remove(key.as_str())
        .ok_or_else(|| not_found(&key))?;
    Ok(json!({"session": row(&state.live_sessions(), &entry)}))
}

/// `sessions.subscribe {…list parameters}` → `{subscribed, list?}`.
pub(super) fn subscribe(
    state: &Arc<SessionHost>,
    conn: &Conn,
    params: &Value,
) -> Result<Value, MethodError> {
    conn.subscribed.store(true, Ordering::Relaxed);
    let wants_list = params.as_object().is_some_and(|m| !m.is_empty());
    Ok(if wants_list {
        json!({"subscribed": true, "list": page(state, params)?})
    } else {
        json!({"subscribed": true})
    })
}

/// `sessions.unsubscribe`.
pub(super) fn unsubscribe(conn: &Conn) -> Value {
    conn.subscribed.store(false, Ordering::Relaxed);
    json!({"subscribed": false})
}

/// `sessions.reset {key}` → `{ok, key, entry}`: a fresh transcript under the same key.
pub(super) async fn reset(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = key_param(params)?;
    state.release(&key).await;
    let store = Sessions::open(&state.home, key.agent_id());
    let id = store.reset(&key)?;
    Ok(json!({"ok": true, "key": key.as_str(), "entry": {"sessionId": id}}))
}

/// `sessions.delete {key}` → `{ok, key, deleted, archived}` (OpenClaw's `SessionsDeleteResult`).
pub(super) async fn delete(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = key_param(params)?;
    state.release(&key).await;
    let deleted = Sessions::open(&state.home, key.agent_id()).delete(&key)?;
    if !deleted {
        return Err(not_found(&key));
    }
    Ok(json!({"ok": true, "key": key.as_str(), "deleted": true, "archived": []}))
}

/// The session named by `key` (OpenClaw's name) or `sessionKey`.
fn key_param(params: &Value) -> Result<SessionKey, MethodError> {
    let raw = params
        .get("key")
        .or_else(|| params.get("sessionKey"))
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("missing string parameter 'key'"))?;
    SessionKey::parse(raw).map_err(|e| MethodError::invalid(e.to_string()))
}

fn not_found(key: &SessionKey) -> MethodError {
    MethodError::new(ErrorCode::NotFound, format!("no session {}", key.as_str()))
}
