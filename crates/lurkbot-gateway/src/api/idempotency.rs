//! `Idempotency-Key` on `POST /v1/chat/completions` (ARCHITECTURE.md §6.3): a request retried
//! with the same key — after a timeout, a dropped connection, a gateway restart — attaches to
//! the turn the first one started instead of starting another. Its answer comes from the
//! journal once that turn ended (no model call), or when the running turn ends. The key is
//! the request's source id (`api:<key>`, per user home); a key reused with another message is
//! refused (`422`).

use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use lurkbot_state::{TurnRecord, TurnState};

use crate::access::http::HttpError;
use crate::turns::host::SessionHost;

/// The longest a retried request waits for the turn it attaches to.
const MAX_ATTACH_WAIT: Duration = Duration::from_secs(600);

/// The request's `Idempotency-Key`, if it has one.
///
/// # Errors
/// `400` for a key that is not 1–255 visible ASCII characters.
pub(crate) fn key_of(headers: &HeaderMap) -> Result<Option<String>, HttpError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().unwrap_or_default();
    let valid = (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic());
    if !valid {
        return Err(HttpError::bad_request(
            "Idempotency-Key must be 1-255 visible ASCII characters (a UUID is a good one)",
        ));
    }
    Ok(Some(key.to_string()))
}

/// The source id of a key.
pub(crate) fn source(key: &str) -> String {
    format!("api:{key}")
}

/// How an attached request ended.
pub(crate) enum Attached {
    /// The turn's answer.
    Answered(String),
    /// The turn failed (its reason).
    Failed(String),
}

/// Waits for the turn `known` (started by an earlier request with the same key) to end.
///
/// # Errors
/// `422` when this request's message is not the first one's; `503` when the turn does not end
/// within [`MAX_ATTACH_WAIT`] or the journal cannot be read.
pub(crate) async fn attach(
    state: &SessionHost,
    known: TurnRecord,
    message: &str,
) -> Result<Attached, HttpError> {
    if known.message != message {
        return Err(HttpError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency_key_reused",
            "this Idempotency-Key was used for another message; use a new key for a new request",
        ));
    }
    let deadline = tokio::time::Instant::now() + MAX_ATTACH_WAIT;
    let mut turn = known;
    loop {
        match turn.state {
            TurnState::Done => return Ok(Attached::Answered(turn.reply.unwrap_or_default())),
            TurnState::Failed => {
                return Ok(Attached::Failed(
                    turn.error.unwrap_or_else(|| "the turn failed".into()),
                ));
            }
            TurnState::Queued | TurnState::Running => {}
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Err(HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the turn this Idempotency-Key started is still running; retry later with the same key",
            ));
        }
        // A live run is waited for; one not started yet (waiting for its session, or for the
        // gateway to resume it) is looked at again shortly.
        if state
            .wait(&turn.id, left.min(Duration::from_secs(30)))
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let store = state.store().ok_or_else(|| {
            HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "no state store",
            )
        })?;
        turn = store
            .turn(&turn.id)
            .map_err(|e| {
                HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    e.to_string(),
                )
            })?
            .ok_or_else(|| {
                HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the turn this Idempotency-Key started is gone from the journal",
                )
            })?;
    }
}
