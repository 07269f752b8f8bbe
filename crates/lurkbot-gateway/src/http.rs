//! HTTP pieces the API handlers share: the bearer-token check (with the failed-attempt limiter
//! and the browser origin check) and errors in OpenAI's JSON shape.

use std::net::IpAddr;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::{origin_allowed, token_matches};
use crate::state::AppState;

/// An HTTP error answered as `{"error": {"message", "type", "code"}}`.
#[derive(Debug)]
pub(crate) struct HttpError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl HttpError {
    /// An error with a status and type.
    pub(crate) fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
        }
    }

    /// 400.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// 500 from a store error.
    pub(crate) fn internal(error: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            error.to_string(),
        )
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"message": self.message, "type": self.kind,
            "code": self.status.as_u16()}});
        (self.status, axum::Json(body)).into_response()
    }
}

/// The bearer token in `Authorization`.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

/// Checks origin and the gateway token for an API request.
///
/// # Errors
/// 403 for a foreign browser origin, 429 while the client is blocked, 401 for a wrong token.
pub(crate) fn authorize(
    state: &AppState,
    headers: &HeaderMap,
    peer: IpAddr,
) -> Result<(), HttpError> {
    check(
        state,
        headers,
        peer,
        state.token.as_deref(),
        "the gateway token",
    )
}

/// Checks origin and `expected` (when set) as the bearer token.
///
/// # Errors
/// As [`authorize`].
pub(crate) fn check(
    state: &AppState,
    headers: &HeaderMap,
    peer: IpAddr,
    expected: Option<&str>,
    what: &str,
) -> Result<(), HttpError> {
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if !origin_allowed(origin, host, &state.config.gateway.allowed_origins) {
        return Err(HttpError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this browser origin may not use the gateway; add it to gateway.allowed_origins",
        ));
    }
    if let Some(wait) = state.limiter.blocked(peer) {
        return Err(HttpError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many failed attempts; try again in {wait} s"),
        ));
    }
    let Some(expected) = expected else {
        return Ok(());
    };
    if bearer(headers).is_some_and(|given| token_matches(expected, given)) {
        return Ok(());
    }
    state.limiter.fail(peer);
    Err(HttpError::new(
        StatusCode::UNAUTHORIZED,
        "invalid_api_key",
        format!("send {what} as 'Authorization: Bearer <token>'"),
    ))
}
