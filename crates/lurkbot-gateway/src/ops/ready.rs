//! `GET /ready`: readiness, for a load balancer in front of several gateways (ARCHITECTURE.md
//! §6.3): `200 {"ready": true}` when this gateway can take work — its state store answers with
//! a schema it can use and it is not stopping — else `503` with the reasons and
//! `Retry-After`. `/health` stays liveness: a draining gateway is alive and not ready. Neither
//! needs the token (a load balancer's checks carry none); neither says more than this: a
//! store that does not answer is "state store unreachable" (the database's user, host, port
//! and name are in the gateway's log, once per change, never in the answer).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use std::sync::Arc;

use crate::turns::host::SessionHost;

/// The answer to `GET /ready`.
pub(crate) async fn ready(State(host): State<Arc<SessionHost>>) -> Response {
    let mut problems: Vec<String> = Vec::new();
    match host.store() {
        None => problems.push("the state store is not open".into()),
        Some(store) => {
            if let Err(e) = store.ready() {
                problems.push(public_reason(&e).into());
                log_once(&e.to_string());
            } else {
                log_once("");
            }
        }
    }
    if host.drain.is_draining() {
        problems.push("stopping: running turns are finishing".into());
    }
    if problems.is_empty() {
        return Json(json!({"ready": true})).into_response();
    }
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({"ready": false, "problems": problems})),
    )
        .into_response();
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(crate::turns::drain::RETRY_AFTER_SECS),
    );
    response
}

/// What `/ready` says of a store that is not ready: no address, user or database name.
fn public_reason(e: &lurkbot_state::StateError) -> &'static str {
    match e {
        lurkbot_state::StateError::Newer { .. } => {
            "the state store's schema is newer than this build"
        }
        _ => "state store unreachable",
    }
}

/// Logs why the store is not ready when the reason changes (a load balancer asks every
/// second); `""` when it is ready again.
fn log_once(reason: &str) {
    static LAST: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    let mut last = match LAST.lock() {
        Ok(last) => last,
        Err(poisoned) => poisoned.into_inner(),
    };
    if *last != reason {
        if reason.is_empty() {
            tracing::info!("the state store answers again: ready");
        } else {
            tracing::warn!(error = reason, "not ready: the state store does not answer");
        }
        *last = reason.to_string();
    }
}
