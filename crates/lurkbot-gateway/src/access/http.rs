//! HTTP pieces every route shares: the guard against DNS rebinding and foreign browser origins
//! (all routes), the bearer-token check with the failed-attempt limiter (made from the headers,
//! before any body is read), the capped body read, and errors in OpenAI's JSON shape.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use axum::extract::{Request, State};
use axum::middleware::Next;

use crate::access::auth::{host_allowed, origin_allowed, token_matches};
use crate::state::AppState;

/// An HTTP error answered as `{"error": {"message", "type", "code"}}`.
#[derive(Debug)]
pub(crate) struct HttpError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    /// Seconds for a `Retry-After` header.
    retry_after: Option<u64>,
}

impl HttpError {
    /// An error with a status and type.
    pub(crate) fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 503 with `Retry-After` while the gateway stops (`turns/drain.rs`), or `None`.
    pub(crate) fn if_stopping(host: &crate::turns::host::SessionHost) -> Option<Self> {
        host.drain.is_draining().then(|| Self {
            retry_after: Some(crate::turns::drain::RETRY_AFTER_SECS),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                crate::turns::drain::STOPPING,
            )
        })
    }

    /// 503 with `Retry-After`: the state store could not record the turn (it is down, or
    /// refused), so nothing was started; the same request may be sent again.
    pub(crate) fn store_down(message: impl Into<String>) -> Self {
        Self {
            retry_after: Some(crate::turns::drain::RETRY_AFTER_SECS),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
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
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

/// The agent could not do it (a store failure): 500 with the reason.
impl From<lurkbot_agent::AgentError> for HttpError {
    fn from(error: lurkbot_agent::AgentError) -> Self {
        Self::internal(error)
    }
}

/// The peer address axum recorded for the connection.
fn peer_ip(parts: &Parts) -> Result<IpAddr, HttpError> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip())
        .ok_or_else(|| HttpError::internal("the connection's peer address is unknown"))
}

/// Proof that a request carries a credential (the gateway token; on a shared gateway a user's
/// token or sign-in), checked from its headers before any body is read (and with the
/// failed-attempt limiter), and the state the request is served with: the gateway's own, or
/// the signed-in user's. A handler that takes it cannot run for an unauthenticated request;
/// refusals answer as [`HttpError`].
#[derive(Clone)]
pub(crate) struct GatewayAuth(pub(crate) AppState);

impl FromRequestParts<AppState> for GatewayAuth {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, HttpError> {
        let peer = peer_ip(parts)?;
        refuse_blocked(state, peer)?;
        let signed = crate::access::credentials::identify_request(state, &parts.headers, peer)
            .map_err(|refusal| {
                let what = match refusal {
                    crate::access::credentials::Refusal::Missing => "no token",
                    crate::access::credentials::Refusal::Wrong => "wrong token",
                };
                tracing::warn!(%peer, "auth failure: {what}");
                let what = if state.users.is_some() {
                    "your user token (lurkbot users token NAME) or the gateway token"
                } else {
                    "the gateway token"
                };
                HttpError::new(
                    StatusCode::UNAUTHORIZED,
                    "invalid_api_key",
                    format!("send {what} as 'Authorization: Bearer <token>'"),
                )
            })?;
        match &state.members {
            Some(members) => members.state_for(state, &signed).map(Self).map_err(|e| {
                HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    e.to_string(),
                )
            }),
            None => Ok(Self(state.clone())),
        }
    }
}

/// 429 while `peer` (or everyone) is blocked after wrong credentials.
pub(crate) fn refuse_blocked(state: &AppState, peer: IpAddr) -> Result<(), HttpError> {
    match state.limiter.blocked(peer) {
        Some(wait) => {
            tracing::warn!(%peer, wait_seconds = wait, "auth refused: too many failed attempts");
            Err(HttpError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many failed attempts; try again in {wait} s"),
            ))
        }
        None => Ok(()),
    }
}

/// Like [`GatewayAuth`] for the hooks' own token; 404 while hooks are off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HooksAuth;

impl FromRequestParts<AppState> for HooksAuth {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, HttpError> {
        let Some(token) = state.hooks_token.as_deref() else {
            return Err(HttpError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "hooks are off: set LURKBOT_HOOKS_TOKEN (environment or the home's .env) to turn them on",
            ));
        };
        check(
            state,
            &parts.headers,
            peer_ip(parts)?,
            Some(token),
            "the hooks token",
        )?;
        Ok(Self)
    }
}

/// Checks `expected` (when set) as the bearer token.
///
/// # Errors
/// 429 while the client is blocked, 401 for a wrong token.
pub(crate) fn check(
    state: &AppState,
    headers: &HeaderMap,
    peer: IpAddr,
    expected: Option<&str>,
    what: &str,
) -> Result<(), HttpError> {
    refuse_blocked(state, peer)?;
    let Some(expected) = expected else {
        return Ok(());
    };
    match crate::access::credentials::bearer(headers).filter(|g| !g.is_empty()) {
        Some(given) if token_matches(expected, given) => return Ok(()),
        // Only a wrong credential counts towards the limit; a missing one locks nobody out.
        Some(_) => {
            tracing::warn!(%peer, credential = what, "auth failure: wrong token");
            state.limiter.fail(peer);
        }
        None => tracing::info!(%peer, credential = what, "auth failure: no token"),
    }
    Err(HttpError::new(
        StatusCode::UNAUTHORIZED,
        "invalid_api_key",
        format!("send {what} as 'Authorization: Bearer <token>'"),
    ))
}

/// Largest request body read (after the credentials were checked).
pub(crate) const MAX_BODY: usize = 2 * 1024 * 1024;

/// Largest chat completion request: room for a 20 MiB picture as base64 in a data: URL.
pub(crate) const MAX_CHAT_BODY: usize = 28 * 1024 * 1024;

/// Reads a request body of at most [`MAX_BODY`] bytes.
///
/// # Errors
/// 413 when it is larger, 400 when it cannot be read.
pub(crate) async fn read_body(body: axum::body::Body) -> Result<axum::body::Bytes, HttpError> {
    read_body_up_to(body, MAX_BODY).await
}

/// Reads a request body of at most `limit` bytes.
///
/// # Errors
/// 413 when it is larger, 400 when it cannot be read.
pub(crate) async fn read_body_up_to(
    body: axum::body::Body,
    limit: usize,
) -> Result<axum::body::Bytes, HttpError> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            HttpError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                format!("the body is larger than {limit} bytes"),
            )
        } else {
            HttpError::bad_request(format!("the body could not be read: {e}"))
        }
    })
}

/// Every route: refuses a `Host` that does not name this gateway (DNS rebinding) and a browser
/// `Origin` that is not the gateway's own or listed (ARCHITECTURE.md §6).
pub(crate) async fn guard(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = std::time::Instant::now();
    crate::access::forwarded::rewrite(&mut request, &state.config().gateway.trusted_proxies);
    let method = request.method().clone();
    // The path only: a query string could carry a credential.
    let path = request.uri().path().to_string();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let response = refuse_foreign(&state, request, next).await;
    let status = response.status().as_u16();
    let ms = started.elapsed().as_millis() as u64;
    let peer = peer.map(|p| p.to_string()).unwrap_or_default();
    if response.status().is_client_error() || response.status().is_server_error() {
        tracing::warn!(method = %method, path, status, ms, peer, "request");
    } else {
        tracing::info!(method = %method, path, status, ms, peer, "request");
    }
    response
}

/// The Host and Origin checks of [`guard`].
async fn refuse_foreign(state: &AppState, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let config = state.config();
    let gateway = &config.gateway;
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    if let Some(host) = host
        && !host_allowed(host, state.bound(), &gateway.allowed_hosts)
    {
        return HttpError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this Host is not the gateway's address; open it by its address or localhost, or add the name to gateway.allowed_hosts",
        )
        .into_response();
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    if !origin_allowed(
        origin,
        state.bound(),
        &gateway.allowed_hosts,
        &gateway.allowed_origins,
    ) {
        return HttpError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this browser origin may not use the gateway; add it to gateway.allowed_origins",
        )
        .into_response();
    }
    next.run(request).await
}

/// The W3C trace context an HTTP request carries (`traceparent`), for the turn it starts
/// (ARCHITECTURE.md §6.4); a malformed header is ignored, as the standard says.
pub(crate) fn trace_parent(
    headers: &axum::http::HeaderMap,
) -> Option<lurkbot_core::trace::TraceContext> {
    headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(lurkbot_core::trace::TraceContext::parse)
}
