//! The WebSocket methods (ARCHITECTURE.md §6). Each takes the request's `params` object and answers a
//! payload or a [`MethodError`].

use std::time::Duration;

use lurkbot_agent::{Decision, Entry, Sessions};
use lurkbot_core::SessionKey;
use lurkbot_term::ExecRequest;
use serde_json::{Value, json};

use crate::protocol::{ErrorCode, MethodError};
use crate::state::AppState;

/// Longest `agent.wait`.
const MAX_WAIT_MS: u64 = 600_000;

fn str_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, MethodError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid(format!("missing string parameter '{name}'")))
}

fn session_param(params: &Value) -> Result<SessionKey, MethodError> {
    match params.get("sessionKey").and_then(Value::as_str) {
        None => Ok(SessionKey::main()),
        Some(raw) => SessionKey::parse(raw).map_err(|e| MethodError::invalid(e.to_string())),
    }
}

/// Runs `method`.
///
/// # Errors
/// `NOT_FOUND` for unknown methods; each method's own refusals.
pub(crate) async fn call(
    state: &AppState,
    method: &str,
    params: &Value,
) -> Result<Value, MethodError> {
    match method {
        "health" => Ok(json!({"ok": true, "version": env!("CARGO_PKG_VERSION")})),
        "status" => Ok(json!({
            "version": env!("CARGO_PKG_VERSION"),
            "liveSessions": state.host.live_sessions(),
            "pendingApprovals": state.approver.pending(),
            "connections": state.connections(),
        })),
        "chat.send" | "agent" => {
            let key = session_param(params)?;
            let message = str_param(params, "message")?;
            if message.trim().is_empty() {
                return Err(MethodError::invalid("message is empty"));
            }
            let run_id = state.host.start(key.clone(), message.to_string(), false)?;
            Ok(json!({"runId": run_id, "sessionKey": key.as_str(), "status": "started"}))
        }
        "agent.wait" => {
            let run_id = str_param(params, "runId")?;
            let timeout = params
                .get("timeoutMs")
                .and_then(Value::as_u64)
                .unwrap_or(30_000)
                .min(MAX_WAIT_MS);
            let end = state
                .host
                .wait(run_id, Duration::from_millis(timeout))
                .await?;
            Ok(match end {
                Some(end) => {
                    let mut v = end.to_json();
                    v["runId"] = json!(run_id);
                    v
                }
                None => json!({"runId": run_id, "status": "running"}),
            })
        }
        "chat.abort" => {
            let key = session_param(params)?;
            Ok(json!({"aborted": state.host.abort(&key).await}))
        }
        "chat.history" | "sessions.history" => history(state, params),
        "sessions.list" => {
            let agent = params
                .get("agentId")
                .and_then(Value::as_str)
                .unwrap_or("main");
            let sessions = Sessions::open(&state.home, agent)
                .list()
                .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?;
            Ok(json!({"sessions": sessions.into_values().collect::<Vec<_>>()}))
        }
        "sessions.reset" => {
            let key = session_param(params)?;
            state.host.release(&key).await;
            let id = Sessions::open(&state.home, key.agent_id())
                .reset(&key)
                .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?;
            Ok(json!({"sessionKey": key.as_str(), "sessionId": id}))
        }
        "sessions.delete" => {
            let key = session_param(params)?;
            state.host.release(&key).await;
            let deleted = Sessions::open(&state.home, key.agent_id())
                .delete(&key)
                .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?;
            if !deleted {
                return Err(MethodError::new(
                    ErrorCode::NotFound,
                    format!("no session {}", key.as_str()),
                ));
            }
            Ok(json!({"deleted": true}))
        }
        "terminal.exec" => {
            let mut request = ExecRequest::new(str_param(params, "command")?);
            request.session = session_param(params)?;
            request.stdin = params
                .get("stdin")
                .and_then(Value::as_str)
                .map(str::to_string);
            request.timeout_ms = params.get("timeoutMs").and_then(Value::as_u64);
            let envelope = state.exec.run(request).await;
            serde_json::to_value(&envelope)
                .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))
        }
        "exec.approval.resolve" => {
            let id = str_param(params, "approvalId")?;
            let decision: Decision = str_param(params, "decision")?
                .parse()
                .map_err(MethodError::invalid)?;
            if state.approver.resolve(id, decision) {
                Ok(json!({"approvalId": id, "decision": decision}))
            } else {
                Err(MethodError::new(
                    ErrorCode::NotFound,
                    format!("no pending approval {id} (already answered or timed out)"),
                ))
            }
        }
        other => Err(MethodError::new(
            ErrorCode::NotFound,
            format!("unknown method '{other}'"),
        )),
    }
}

fn history(state: &AppState, params: &Value) -> Result<Value, MethodError> {
    let key = session_param(params)?;
    let sessions = Sessions::open(&state.home, key.agent_id());
    let list = sessions
        .list()
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?;
    let Some(entry) = list.get(key.as_str()) else {
        return Ok(json!({"sessionKey": key.as_str(), "messages": []}));
    };
    let limit = params.get("limit").and_then(Value::as_u64).unwrap_or(200) as usize;
    let entries = sessions
        .history(&entry.session_id)
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?;
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
