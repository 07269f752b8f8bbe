//! Who a WebSocket `connect` or an HTTP request is, in one place for both (ARCHITECTURE.md §6,
//! §6.2): the gateway token is the owner; on a shared gateway a user's token (`lbu_…`, as
//! `auth.token` or `Authorization: Bearer`) or their web UI sign-in cookie is that user. Only a
//! **wrong** credential counts towards the failed-attempt limit; a missing one locks nobody out.

use std::net::IpAddr;

use axum::http::HeaderMap;

use crate::access::auth::token_matches;
use crate::state::AppState;
use crate::users::tenants::{SESSION_COOKIE, Signed, cookie};

/// Why a credential was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// None was given.
    Missing,
    /// A wrong one was given (counted).
    Wrong,
}

/// Who presents `given` (a token, possibly empty) and, from a browser, `cookie_value`.
///
/// # Errors
/// [`Refusal`]; a wrong credential is counted against `peer`.
pub(crate) fn identify(
    state: &AppState,
    given: &str,
    cookie_value: Option<&str>,
    peer: IpAddr,
) -> Result<Signed, Refusal> {
    let given = given.trim();
    let owner = match state.token.as_deref() {
        Some(expected) => !given.is_empty() && token_matches(expected, given),
        // `gateway.auth = "none"` (loopback only): no token is needed, but on a shared
        // gateway the owner still proves nothing, so only users' credentials sign in then.
        None => state.users.is_none(),
    };
    if owner {
        return Ok(Signed::owner());
    }
    if let Some(users) = &state.users {
        if let Some(signed) = users.by_token(given) {
            return Ok(signed);
        }
        if given.is_empty()
            && let Some(signed) = cookie_value.and_then(|c| users.by_cookie(c))
        {
            return Ok(signed);
        }
    }
    if given.is_empty() {
        // No token (an expired or ended sign-in included): nothing is counted.
        return Err(Refusal::Missing);
    }
    state.limiter.fail(peer);
    Err(Refusal::Wrong)
}

/// [`identify`] for an HTTP request: `Authorization: Bearer`, else the sign-in cookie.
///
/// # Errors
/// As [`identify`].
pub(crate) fn identify_request(
    state: &AppState,
    headers: &HeaderMap,
    peer: IpAddr,
) -> Result<Signed, Refusal> {
    let given = bearer(headers).unwrap_or("");
    identify(state, given, cookie(headers, SESSION_COOKIE), peer)
}

/// The error a refused `connect` answers with (OpenClaw's wording on its dialect, which its
/// clients recognise), logged.
pub(crate) fn refused_connect(
    state: &AppState,
    peer: IpAddr,
    refusal: Refusal,
    version: crate::protocol::ProtocolVersion,
) -> crate::protocol::MethodError {
    use crate::protocol::{ErrorCode, MethodError};
    match refusal {
        Refusal::Missing => {
            tracing::info!(%peer, "auth failure: WebSocket connect without a token");
        }
        Refusal::Wrong => {
            tracing::warn!(%peer, "auth failure: WebSocket connect with a wrong token");
        }
    }
    let place = if state.users.is_some() {
        "a user's token from 'lurkbot users token NAME', or gateway.token in LurkBot's config.toml or LURKBOT_GATEWAY_TOKEN"
    } else {
        "it is gateway.token in LurkBot's config.toml or LURKBOT_GATEWAY_TOKEN"
    };
    if version.is_openclaw() {
        let what = match refusal {
            Refusal::Missing => "missing",
            Refusal::Wrong => "mismatch",
        };
        MethodError::invalid(format!("unauthorized: gateway token {what} ({place})"))
    } else {
        MethodError::new(
            ErrorCode::Unauthorized,
            format!("wrong or missing token (auth.token); {place}"),
        )
    }
}

/// The bearer token in `Authorization`.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}
