//! Webhooks with their own bearer token (`LURKBOT_HOOKS_TOKEN`, from the environment or the
//! home's `.env`; without it the hooks answer 404):
//! - `POST /hooks/wake {"text"}`: a system event for the main session, run now as a turn
//!   (`[system event] text`);
//! - `POST /hooks/agent {"message", "sessionKey"?}`: an agent turn in its own `hook:<id>`
//!   session (or the given one).
//!
//! Both answer `202 {"runId", "sessionKey"}` at once; the turn's events go to the WebSocket
//! clients and `agent.wait` returns its end.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use lurkbot_core::SessionKey;
use serde_json::{Value, json};

use crate::access::http::{HooksAuth, HttpError, read_body};
use crate::state::AppState;

/// `POST /hooks/wake`.
pub(crate) async fn wake(
    _auth: HooksAuth,
    State(state): State<AppState>,
    request: Request,
) -> Response {
    run(&state, request, |body| {
        let text = field(body, "text")?;
        Ok((SessionKey::main(), format!("[system event] {text}"), false))
    })
    .await
}

/// `POST /hooks/agent`.
pub(crate) async fn agent(
    _auth: HooksAuth,
    State(state): State<AppState>,
    request: Request,
) -> Response {
    run(&state, request, |body| {
        let message = field(body, "message")?;
        let (key, own) = match body.get("sessionKey").and_then(Value::as_str) {
            Some(raw) => (
                SessionKey::parse(raw).map_err(|e| HttpError::bad_request(e.to_string()))?,
                false,
            ),
            None => (
                SessionKey::parse(&format!("hook:{}", lurkbot_core::random_hex(8)))
                    .map_err(|e| HttpError::bad_request(e.to_string()))?,
                true,
            ),
        };
        Ok((key, message.to_string(), own))
    })
    .await
}

fn field<'a>(body: &'a Value, name: &str) -> Result<&'a str, HttpError> {
    body.get(name)
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| HttpError::bad_request(format!("'{name}' must be a non-empty string")))
}

async fn run(
    state: &AppState,
    request: Request,
    turn: impl FnOnce(&Value) -> Result<(SessionKey, String, bool), HttpError>,
) -> Response {
    if let Some(stopping) = HttpError::if_stopping(&state.host) {
        return stopping.into_response();
    }
    // The caller's trace, for the turn's span (ARCHITECTURE.md §6.4).
    let trace = crate::access::http::trace_parent(request.headers());
    let result: Result<Value, HttpError> = async {
        // HooksAuth checked the token from the headers before the body is read.
        let body = read_body(request.into_body()).await?;
        let body: Value = serde_json::from_slice(&body)
            .map_err(|e| HttpError::bad_request(format!("the body is not JSON: {e}")))?;
        let (key, message, ephemeral) = turn(&body)?;
        let run_id = lurkbot_core::trace::within(trace, || {
            state.host.start(key.clone(), message, ephemeral)
        })
        .map_err(|e| HttpError::new(StatusCode::CONFLICT, "busy", e.message))?;
        tracing::info!(session = key.as_str(), run_id, "hook started a turn");
        Ok(json!({"runId": run_id, "sessionKey": key.as_str()}))
    }
    .await;
    match result {
        Ok(v) => (StatusCode::ACCEPTED, axum::Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}
