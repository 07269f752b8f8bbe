//! The web UI's sign-in on a shared gateway (ARCHITECTURE.md §6.2): `POST /auth/login
//! {user, password}` checks the password's argon2id hash and sets the session cookie
//! (`HttpOnly; SameSite=Strict; Path=/`, an expiry of `[users] session_hours`, `Secure` when
//! the page came over TLS); `POST /auth/logout` ends it (its open connections close);
//! `GET /auth/me` says who the cookie signs in, if anyone.
//!
//! A failed sign-in counts against the address and against the user name given, whether or
//! not such a user exists, and every refusal reads the same: nothing tells a stranger which
//! names exist. An unknown name costs a hash check too, so timing does not tell either.

use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::access::http::{HttpError, read_body_up_to, refuse_blocked};
use crate::state::AppState;
use crate::users::tenants::{SESSION_COOKIE, Tenants, cookie};

/// Largest sign-in request.
const MAX_LOGIN_BODY: usize = 8 * 1024;

/// The one answer to every wrong sign-in.
const WRONG: &str = "wrong user name or password";

fn users_of(state: &AppState) -> Result<&Tenants, HttpError> {
    state.users.as_deref().ok_or_else(|| {
        HttpError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "users are off: this gateway signs in with its token ([users] enabled = false)",
        )
    })
}

/// `POST /auth/login {user, password}`.
pub(crate) async fn login(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    match attempt(&state, addr.ip(), request).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn attempt(state: &AppState, peer: IpAddr, request: Request) -> Result<Response, HttpError> {
    let users = users_of(state)?;
    refuse_blocked(state, peer)?;
    let (parts, body) = request.into_parts();
    let body = read_body_up_to(body, MAX_LOGIN_BODY).await?;
    let form: Value = serde_json::from_slice(&body).map_err(|_| {
        HttpError::bad_request("send JSON: {\"user\": NAME, \"password\": PASSWORD}")
    })?;
    let (Some(name), Some(password)) = (
        form.get("user").and_then(Value::as_str),
        form.get("password").and_then(Value::as_str),
    ) else {
        return Err(HttpError::bad_request(
            "send JSON: {\"user\": NAME, \"password\": PASSWORD}",
        ));
    };
    let name = name.trim().to_ascii_lowercase();
    if let Some(wait) = users.by_name.blocked(name.clone()) {
        tracing::warn!(%peer, wait_seconds = wait, "sign-in refused: too many failed attempts for one name");
        return Err(HttpError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many failed sign-ins; try again in {wait} s"),
        ));
    }
    let counted = count_attempt(state, &name, peer).await?;
    let _one = users
        .hashing
        .acquire()
        .await
        .map_err(|_| HttpError::internal("the gateway is stopping"))?;
    let user = users.users().into_iter().find(|u| u.name == name);
    let hash = user
        .as_ref()
        .and_then(|u| u.password.clone())
        .unwrap_or_else(|| stand_in().to_string());
    let known = user.as_ref().is_some_and(|u| u.password.is_some());
    let given = password.to_string();
    let matches =
        tokio::task::spawn_blocking(move || crate::users::store::password_matches(&hash, &given))
            .await
            .unwrap_or(false);
    let Some(user) = user.filter(|_| known && matches) else {
        tracing::warn!(%peer, "sign-in failed");
        // A counted attempt stays counted: it was wrong.
        state.limiter.fail(peer);
        users.by_name.fail(name);
        return Err(HttpError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            WRONG,
        ));
    };
    if let Some((store, id)) = counted {
        let forgotten = tokio::task::spawn_blocking(move || store.attempt_succeeded(&id)).await;
        if !matches!(forgotten, Ok(Ok(()))) {
            tracing::warn!("a right sign-in stays counted: the state store failed");
        }
    }
    let hours = state.config().users.session_hours;
    let value = users.sign_in(&user.name, hours);
    tracing::info!(%peer, user = user.name, "signed in");
    let secure = over_tls(&parts.headers);
    let set = format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{}",
        hours.max(1) * 3600,
        if secure { "; Secure" } else { "" }
    );
    let mut response = axum::Json(json!({"user": user.name, "admin": user.admin})).into_response();
    if let Ok(v) = HeaderValue::from_str(&set) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

/// On PostgreSQL, counts the attempt in the store every gateway on it shares — against the
/// name and the address, before the password is checked, in one transaction with the check of
/// the counts — so spreading attempts over gateways gains nothing. The attempt's hold, to be
/// forgotten when the password was right; `None` on the embedded store (one gateway: its own
/// counts suffice).
async fn count_attempt(
    state: &AppState,
    name: &str,
    peer: IpAddr,
) -> Result<Option<(lurkbot_state::Store, String)>, HttpError> {
    let Some(store) = state.host.store().filter(|s| s.backend() == "postgres") else {
        return Ok(None);
    };
    let (store, keys) = (
        store.clone(),
        vec![format!("name:{name}"), format!("addr:{peer}")],
    );
    let max = u32::try_from(crate::access::auth::MAX_FAILURES).unwrap_or(u32::MAX);
    let window = u64::try_from(crate::access::auth::WINDOW.as_millis()).unwrap_or(u64::MAX);
    let counting = store.clone();
    let now = lurkbot_core::now_ms();
    let counted =
        tokio::task::spawn_blocking(move || counting.begin_attempt(&keys, max, window, now))
            .await
            .map_err(|e| HttpError::internal(format!("sign-in not counted: {e}")))?
            .map_err(|e| {
                // Never unlimited: without the shared counts no sign-in is checked.
                HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    format!("sign-ins are paused: the state store failed ({e}); try again shortly"),
                )
            })?;
    match counted {
        Ok(id) => Ok(Some((store, id))),
        Err(wait) => {
            tracing::warn!(%peer, wait_seconds = wait, "sign-in refused: too many failed attempts (all gateways)");
            Err(HttpError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many failed sign-ins; try again in {wait} s"),
            ))
        }
    }
}

/// `POST /auth/logout`: ends the cookie's sign-in and clears it.
pub(crate) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let (Some(users), Some(value)) = (state.users.as_deref(), cookie(&headers, SESSION_COOKIE)) {
        users.sign_out(value);
    }
    let secure = if over_tls(&headers) { "; Secure" } else { "" };
    let clear = format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}");
    let mut response = axum::Json(json!({"signedOut": true})).into_response();
    if let Ok(v) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// `GET /auth/me`: `{users, signedIn: {user, admin} | null}` — whether this gateway has users
/// and whom the cookie signs in.
pub(crate) async fn me(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let signed = state
        .users
        .as_deref()
        .and_then(|users| cookie(&headers, SESSION_COOKIE).and_then(|c| users.by_cookie(c)));
    axum::Json(json!({
        "users": state.users.is_some(),
        "signedIn": signed.map(|s| s.describe()),
    }))
    .into_response()
}

/// Whether the page came over TLS (the browser's `Origin` is `https:`, as behind a TLS proxy).
fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|o| o.starts_with("https://"))
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|p| p.eq_ignore_ascii_case("https"))
}

/// A hash no password matches, checked for unknown names so they cost what known ones do.
fn stand_in() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        crate::users::store::hash_password(&lurkbot_core::random_hex(16)).unwrap_or_default()
    })
}
