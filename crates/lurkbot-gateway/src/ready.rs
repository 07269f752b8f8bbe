//! `GET /ready`: readiness, for a load balancer in front of several gateways (ARCHITECTURE.md
//! §6.3): `200 {"ready": true}` when this gateway can take work — its state store answers with
//! a schema it can use and it is not stopping — else `503` with the reasons and
//! `Retry-After`. `/health` stays liveness: a draining gateway is alive and not ready. Neither
//! needs the token (a load balancer's checks carry none); neither says more than this.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::state::AppState;

/// The answer to `GET /ready`.
pub(crate) async fn ready(State(state): State<AppState>) -> Response {
    let mut problems: Vec<String> = Vec::new();
    match state.host.store() {
        None => problems.push("the state store is not open".into()),
        Some(store) => {
            if let Err(e) = store.ready() {
                problems.push(e.to_string());
            }
        }
    }
    if state.host.drain.is_draining() {
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
        HeaderValue::from(crate::drain::RETRY_AFTER_SECS),
    );
    response
}
