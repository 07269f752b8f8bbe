//! The session methods: `chat.send`/`agent` (a turn), `agent.wait`, `chat.abort`,
//! `sessions.*`, `chat.history`, `terminal.exec` and `exec.approval.resolve` — each on the
//! session host alone.

use crate::protocol::{ErrorCode, MethodError};
use crate::turns::host::SessionHost;
use lurkbot_agent::{Decision, Entry, Sessions};
use lurkbot_core::SessionKey;
use lurkbot_term::ExecRequest;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Longest `agent.wait`.
const MAX_WAIT_MS: u64 = 600_000;

pub(crate) fn str_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, MethodError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid(format!("missing string parameter '{name}'")))
}

/// The `sessionKey` parameter (default `agent:main:main`), checked.
pub(crate) fn session_param(params: &Value) -> Result<SessionKey, MethodError> {
    match params.get("sessionKey").and_then(Value::as_str) {
        None => Ok(SessionKey::main()),
        Some(raw) => SessionKey::parse(raw).map_err(|e| MethodError::invalid(e.to_string())),
    }
}

/// `chat.send` and `agent`: starts a turn, answers its run id at once.
/// `chat.send {sessionKey, message, images?}`: starts a turn; `images` are data URLs of
/// pictures shown with the message (the web UI's attach button).
pub(crate) async fn send(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = session_param(params)?;
    let message = str_param(params, "message")?;
    let urls: Vec<&str> = match params.get("images") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .ok_or_else(|| MethodError::invalid("images must be data: URL strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(MethodError::invalid("images must be a list of data: URLs")),
    };
    if message.trim().is_empty() && urls.is_empty() {
        return Err(MethodError::invalid("message is empty"));
    }
    let raw = crate::api::images::decode_all(&urls).map_err(MethodError::invalid)?;
    let images = crate::api::images::ready(&state.home, raw)
        .await
        .map_err(MethodError::invalid)?;
    let options = crate::turns::run::TurnOptions {
        images,
        ..Default::default()
    };
    let (run_id, _) = state.spawn_with(
        key.clone(),
        message.to_string(),
        options,
        false,
        Box::new(|_| {}),
    )?;
    if key == SessionKey::main() {
        state.note_route("webchat", None);
    }
    Ok(json!({"runId": run_id, "sessionKey": key.as_str(), "status": "started"}))
}

pub(crate) async fn wait(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let run_id = str_param(params, "runId")?;
    let timeout = params
        .get("timeoutMs")
        .and_then(Value::as_u64)
        .unwrap_or(30_000)
        .min(MAX_WAIT_MS);
    let end = state.wait(run_id, Duration::from_millis(timeout)).await?;
    Ok(match end {
        Some(end) => {
            let mut v = end.to_json();
            v["runId"] = json!(run_id);
            v
        }
        None => json!({"runId": run_id, "status": "running"}),
    })
}

/// `sessions.wait {sessionKey, timeoutMs}`: `{idle}` once the session runs no turn and no
/// background work, or when the time is up (`timeoutMs: 0` only looks).
pub(crate) async fn wait_idle(
    state: &Arc<SessionHost>,
    params: &Value,
) -> Result<Value, MethodError> {
    let key = session_param(params)?;
    let timeout = params
        .get("timeoutMs")
        .and_then(Value::as_u64)
        .unwrap_or(30_000)
        .min(MAX_WAIT_MS);
    let idle = state.wait_idle(&key, Duration::from_millis(timeout)).await;
    // The latest run, whose last events a client may still be receiving.
    let last_run = state
        .slot(&key)
        .last_run
        .lock()
        .ok()
        .and_then(|l| l.clone());
    Ok(json!({"sessionKey": key.as_str(), "idle": idle, "lastRunId": last_run}))
}

pub(crate) async fn abort(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = session_param(params)?;
    Ok(json!({"aborted": state.abort(&key).await}))
}

pub(crate) fn list(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let agent = params
        .get("agentId")
        .and_then(Value::as_str)
        .unwrap_or("main");
    let sessions = Sessions::open(&state.home, agent).list()?;
    Ok(json!({"sessions": sessions.into_values().collect::<Vec<_>>()}))
}

pub(crate) async fn reset(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = session_param(params)?;
    state.release(&key).await;
    let id = Sessions::open(&state.home, key.agent_id()).reset(&key)?;
    Ok(json!({"sessionKey": key.as_str(), "sessionId": id}))
}

pub(crate) async fn delete(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = session_param(params)?;
    state.release(&key).await;
    if !Sessions::open(&state.home, key.agent_id()).delete(&key)? {
        return Err(MethodError::new(
            ErrorCode::NotFound,
            format!("no session {}", key.as_str()),
        ));
    }
    Ok(json!({"deleted": true}))
}

pub(crate) async fn terminal_exec(
    state: &Arc<SessionHost>,
    params: &Value,
) -> Result<Value, MethodError> {
    let mut request = ExecRequest::new(str_param(params, "command")?);
    request.session = session_param(params)?;
    request.stdin = params
        .get("stdin")
        .and_then(Value::as_str)
        .map(str::to_string);
    request.timeout_ms = params.get("timeoutMs").and_then(Value::as_u64);
    let envelope = state.exec().run(request).await;
    serde_json::to_value(&envelope)
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))
}

pub(crate) fn resolve(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let id = str_param(params, "approvalId")?;
    let decision: Decision = str_param(params, "decision")?
        .parse()
        .map_err(MethodError::invalid)?;
    if state.approver.resolve(id, decision) {
        Ok(json!({"approvalId": id, "decision": decision}))
    } else if state.approver.shared() {
        // Perhaps another gateway's turn waits for it: the answer goes there.
        state.approver.announce(id, decision);
        Ok(json!({"approvalId": id, "decision": decision, "forwarded": true}))
    } else {
        Err(MethodError::new(
            ErrorCode::NotFound,
            format!("no pending approval {id} (already answered or timed out)"),
        ))
    }
}

pub(crate) fn history(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = session_param(params)?;
    let sessions = Sessions::open(&state.home, key.agent_id());
    let list = sessions.list()?;
    let Some(entry) = list.get(key.as_str()) else {
        return Ok(json!({"sessionKey": key.as_str(), "messages": []}));
    };
    let limit = params.get("limit").and_then(Value::as_u64).unwrap_or(200) as usize;
    let entries = sessions.history(&entry.session_id)?;
    let messages: Vec<Value> = entries
        .iter()
        .map(|e| match e {
            Entry::Message { ts, message } => json!({"ts": ts, "message": message}),
            Entry::Compaction { ts, summary, .. } => json!({"ts": ts, "compaction": summary}),
        })
        .collect();
    let skip = messages.len().saturating_sub(limit);
    Ok(
        json!({"sessionKey": key.as_str(), "sessionId": entry.session_id,
        "messages": messages[skip..]}),
    )
}
