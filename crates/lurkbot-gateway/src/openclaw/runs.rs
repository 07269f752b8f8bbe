//! Turns in OpenClaw's shapes: `agent` (answered `accepted` at once, then a second response
//! with the same id carrying the result, as OpenClaw's CLI waits for), `agent.wait`,
//! `chat.send`, `chat.abort` and `chat.history`. A client's `idempotencyKey` is the run id, so
//! the events it receives name the run it started and a retried request does not run twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lurkbot_agent::{Entry, Sessions};
use lurkbot_core::SessionKey;
use lurkbot_llm::{Message, Role};
use serde_json::{Value, json};

use super::{Conn, agent_of};
use crate::protocol::{ErrorCode, MethodError};
use crate::turns::host::RunEnd;
use crate::turns::host::SessionHost;

/// Longest wait of `agent` and `agent.wait`.
const MAX_WAIT: Duration = Duration::from_secs(600);
/// `agent`'s wait when the client names none (OpenClaw's default).
const DEFAULT_AGENT_TIMEOUT_S: u64 = 600;
/// Most messages `chat.history` answers.
const MAX_HISTORY: usize = 1000;

/// The session a request names: `sessionKey`, else `agentId`'s main session, else `main`'s.
fn session_of(params: &Value) -> Result<SessionKey, MethodError> {
    let text = |name: &str| params.get(name).and_then(Value::as_str);
    let raw = match (text("sessionKey").or(text("key")), text("agentId")) {
        (Some(key), _) => key.to_string(),
        (None, Some(agent)) => format!("agent:{agent}:main"),
        (None, None) => return Ok(SessionKey::main()),
    };
    SessionKey::parse(&raw).map_err(|e| MethodError::invalid(e.to_string()))
}

/// Starts a turn under the request's `idempotencyKey` (or a fresh id).
fn start(state: &Arc<SessionHost>, params: &Value) -> Result<(SessionKey, String), MethodError> {
    let key = session_of(params)?;
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("missing string parameter 'message'"))?;
    if message.trim().is_empty() {
        return Err(MethodError::invalid("message is empty"));
    }
    let run_id = match params.get("idempotencyKey").and_then(Value::as_str) {
        Some(id) => state.start_as(key.clone(), message.to_string(), id)?,
        None => state.start(key.clone(), message.to_string(), false)?,
    };
    if key == SessionKey::main() {
        state.note_route("webchat", None);
    }
    Ok((key, run_id))
}

/// `agent {message, sessionKey?, agentId?, idempotencyKey, timeout?}`.
pub(super) async fn agent(
    state: &Arc<SessionHost>,
    conn: &Conn,
    params: &Value,
) -> Result<Value, MethodError> {
    let started = Instant::now();
    let (key, run_id) = start(state, params)?;
    (conn.interim)(json!({
        "runId": run_id, "sessionKey": key.as_str(), "agentId": key.agent_id(),
        "status": "accepted", "acceptedAt": lurkbot_core::now_ms(),
    }));
    let timeout = params
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_AGENT_TIMEOUT_S);
    let wait = Duration::from_secs(timeout).min(MAX_WAIT);
    let end = state.wait(&run_id, wait).await?;
    let duration_ms = started.elapsed().as_millis() as u64;
    match end {
        Some(RunEnd::Done { text, model }) => {
            let (provider, model) = model.split_once('/').unwrap_or(("", model.as_str()));
            Ok(json!({
                "runId": run_id, "status": "ok", "summary": "completed",
                "result": {
                    "payloads": [{"text": text, "mediaUrl": null}],
                    "meta": {"durationMs": duration_ms,
                        "agentMeta": {"sessionFile": key.as_str(), "provider": provider,
                            "model": model}},
                    "aborted": false,
                },
            }))
        }
        Some(RunEnd::Failed(message)) => Err(MethodError::new(ErrorCode::Unavailable, message)),
        Some(RunEnd::Aborted) => Ok(json!({
            "runId": run_id, "status": "aborted", "summary": "aborted",
            "result": {"payloads": [], "meta": {"durationMs": duration_ms}, "aborted": true},
        })),
        None => Ok(json!({
            "runId": run_id, "status": "timeout",
            "summary": format!("still running after {timeout} s; agent.wait {{runId}} waits for it"),
        })),
    }
}

/// `agent.wait {runId, timeoutMs?}` → `{runId, status: ok|error|aborted|timeout, …}`.
pub(super) async fn wait(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let run_id = params
        .get("runId")
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("missing string parameter 'runId'"))?;
    let timeout = params
        .get("timeoutMs")
        .and_then(Value::as_u64)
        .unwrap_or(30_000);
    let wait = Duration::from_millis(timeout).min(MAX_WAIT);
    Ok(match state.wait(run_id, wait).await? {
        Some(RunEnd::Done { .. }) => json!({"runId": run_id, "status": "ok",
            "endedAt": lurkbot_core::now_ms()}),
        Some(RunEnd::Failed(error)) => json!({"runId": run_id, "status": "error",
            "error": error, "endedAt": lurkbot_core::now_ms()}),
        Some(RunEnd::Aborted) => json!({"runId": run_id, "status": "aborted"}),
        None => json!({"runId": run_id, "status": "timeout"}),
    })
}

/// `chat.send {sessionKey, message, idempotencyKey}` → `{runId, status: "started"}`.
pub(super) fn chat_send(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let (_, run_id) = start(state, params)?;
    Ok(json!({"runId": run_id, "status": "started"}))
}

/// `chat.abort {sessionKey, runId?}` → `{ok, aborted, runIds}`.
pub(super) async fn chat_abort(
    state: &Arc<SessionHost>,
    params: &Value,
) -> Result<Value, MethodError> {
    let key = session_of(params)?;
    let running = state
        .slot(&key)
        .last_run
        .lock()
        .ok()
        .and_then(|l| l.clone());
    let aborted = state.abort(&key).await;
    let run_ids: Vec<String> = if aborted {
        running.into_iter().collect()
    } else {
        Vec::new()
    };
    Ok(json!({"ok": true, "aborted": aborted, "runIds": run_ids}))
}

/// `chat.history {sessionKey, limit?}` → `{sessionKey, sessionId, messages}` with messages in
/// OpenClaw's form: user text, assistant content parts (text and `toolCall`), `toolResult`.
pub(super) fn chat_history(state: &Arc<SessionHost>, params: &Value) -> Result<Value, MethodError> {
    let key = session_of(params)?;
    let sessions = Sessions::open(&state.home, key.agent_id());
    let Some(entry) = sessions.list()?.remove(key.as_str()) else {
        return Ok(json!({"sessionKey": key.as_str(), "messages": []}));
    };
    let limit = params
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(200, |n| n as usize)
        .min(MAX_HISTORY);
    let mut names = std::collections::HashMap::new();
    let messages: Vec<Value> = sessions
        .history(&entry.session_id)?
        .iter()
        .filter_map(|e| match e {
            Entry::Message { ts, message } => Some(openclaw_message(message, *ts, &mut names)),
            Entry::Compaction { .. } => None,
        })
        .collect();
    let skip = messages.len().saturating_sub(limit);
    Ok(json!({
        "sessionKey": key.as_str(), "sessionId": entry.session_id,
        "agentId": agent_of(key.as_str()), "messages": messages[skip..],
    }))
}

/// One transcript message as OpenClaw's clients render it; `names` remembers each tool call's
/// name for its result.
fn openclaw_message(
    message: &Message,
    ts: u64,
    names: &mut std::collections::HashMap<String, String>,
) -> Value {
    match message.role {
        Role::User => json!({"role": "user", "content": message.content, "timestamp": ts}),
        Role::Assistant => {
            let mut parts = Vec::new();
            if !message.content.is_empty() {
                parts.push(json!({"type": "text", "text": message.content}));
            }
            for call in &message.tool_calls {
                names.insert(call.id.clone(), call.name.clone());
                let arguments: Value =
                    serde_json::from_str(&call.arguments).unwrap_or(json!(call.arguments));
                parts.push(json!({"type": "toolCall", "id": call.id, "name": call.name,
                    "arguments": arguments}));
            }
            json!({"role": "assistant", "content": parts, "timestamp": ts})
        }
        Role::Tool => {
            let id = message.tool_call_id.clone().unwrap_or_default();
            let name = names.get(&id).cloned().unwrap_or_default();
            json!({"role": "toolResult", "toolCallId": id, "toolName": name,
                "content": [{"type": "text", "text": message.content}],
                "isError": message.is_error, "timestamp": ts})
        }
    }
}
