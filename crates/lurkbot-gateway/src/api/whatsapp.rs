//! `/channels/whatsapp/webhook`: Meta's Cloud API calls (ARCHITECTURE.md §6.1.1). The one
//! path the gateway token does not guard — Meta cannot present it — and only while the
//! WhatsApp channel runs in `cloud` mode, which needs the app secret: every `POST` is checked
//! against its `X-Hub-Signature-256` before its body is read as anything
//! (`lurkbot_channels::whatsapp::CloudWebhook`), and answered 200 once recorded.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use lurkbot_channels::whatsapp::{Undelivered, WebhookAnswer};

use crate::turns::host::SessionHost;

/// The answer while no WhatsApp Cloud channel runs here.
fn not_running() -> Response {
    (
        StatusCode::NOT_FOUND,
        "no WhatsApp Cloud API channel runs on this gateway",
    )
        .into_response()
}

/// `GET`: Meta's verification of the callback URL.
pub(crate) async fn verify(
    State(host): State<Arc<SessionHost>>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(webhook) = host.channels.whatsapp_webhook() else {
        return not_running();
    };
    let pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let field = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    answer(webhook.verify(
        field("hub.mode"),
        field("hub.verify_token"),
        field("hub.challenge"),
    ))
}

/// `POST`: a notification (messages, statuses).
pub(crate) async fn notify(
    State(host): State<Arc<SessionHost>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(webhook) = host.channels.whatsapp_webhook() else {
        return not_running();
    };
    let signature = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok());
    let answered = webhook.deliver(signature, &body).await;
    if let WebhookAnswer::Statuses(failed) = &answered {
        note_failures(&host, failed);
    }
    answer(answered)
}

/// Marks our messages WhatsApp could not deliver as failed in the outbox (not retried: the
/// reason, e.g. the 24-hour window, does not pass) and in the channel's status.
fn note_failures(host: &SessionHost, failed: &[Undelivered]) {
    for failure in failed {
        tracing::warn!(
            wamid = failure.wamid,
            error = failure.error,
            "a WhatsApp message was not delivered"
        );
        if let Some(live) = host.channels.live("whatsapp") {
            live.note_error(&failure.error);
        }
        let Some(store) = host.store() else { continue };
        match store.outgoing_by_platform_id("whatsapp", &failure.wamid) {
            Ok(Some(entry)) => {
                if let Err(e) = store.mark_failed(&entry.id, &failure.error, true) {
                    tracing::warn!(error = %e, "outbox entry not marked failed");
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "outbox not read"),
        }
    }
}

fn answer(answer: WebhookAnswer) -> Response {
    match answer {
        WebhookAnswer::Challenge(challenge) => (StatusCode::OK, challenge).into_response(),
        WebhookAnswer::Statuses(_) => StatusCode::OK.into_response(),
        WebhookAnswer::Forbidden(why) => {
            tracing::warn!(reason = why, "a WhatsApp webhook request was refused");
            (StatusCode::FORBIDDEN, why).into_response()
        }
        WebhookAnswer::BadRequest(why) => (StatusCode::BAD_REQUEST, why).into_response(),
        WebhookAnswer::Unavailable(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}
