//! The HTTP exchange both wire formats share: a JSON POST whose answer is an event stream,
//! read chunk by chunk into a [`SseDecoder`]; error answers classified into [`LlmError`].

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::error::{ErrorKind, LlmError};
use crate::sse::{SseDecoder, SseEvent};

/// Longest silence accepted while a reply streams.
const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// Most bytes of an error body kept.
const ERROR_BODY_MAX: usize = 64 * 1024;

/// Builds the provider's HTTP client, with the TLS set-up the process shares.
///
/// # Errors
/// `Protocol` when the client cannot be built.
pub(crate) fn client() -> Result<reqwest::Client, LlmError> {
    let tls = lurkbot_core::tls::client_config();
    reqwest::Client::builder()
        .tls_backend_preconfigured(rustls::ClientConfig::clone(&tls))
        .user_agent(concat!("LurkBot/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30))
        .read_timeout(READ_TIMEOUT)
        .build()
        .map_err(|e| {
            LlmError::new(
                ErrorKind::Protocol,
                format!("cannot build the HTTP client: {e}"),
            )
        })
}

/// POSTs `body` and hands every streamed event to `on_event` (which may stop the stream by
/// returning `Ok(false)`).
///
/// # Errors
/// Classified HTTP failures, `Transient` for network failures, or what `on_event` returns.
pub(crate) async fn post_stream(
    http: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
    body: Vec<u8>,
    on_event: &mut (dyn FnMut(SseEvent) -> Result<bool, LlmError> + Send),
) -> Result<(), LlmError> {
    let mut request = http
        .post(url)
        .headers(headers)
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    // The model call's span, for a provider (or a gateway in front of it) that traces too.
    if let Some(context) = lurkbot_core::trace::current() {
        request = request.header("traceparent", context.header());
    }
    let mut response = request
        .body(body)
        .send()
        .await
        .map_err(|e| network(url, &e))?;
    let status = response.status();
    if !status.is_success() {
        let retry_after_ms = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| s.saturating_mul(1000));
        let mut text = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            text.extend_from_slice(&chunk);
            if text.len() > ERROR_BODY_MAX {
                break;
            }
        }
        return Err(LlmError::from_status(
            status.as_u16(),
            &String::from_utf8_lossy(&text),
            retry_after_ms,
        ));
    }
    let mut decoder = SseDecoder::default();
    loop {
        let chunk = response.chunk().await.map_err(|e| network(url, &e))?;
        let Some(chunk) = chunk else { break };
        for event in decoder.push(&chunk) {
            if !on_event(event)? {
                return Ok(());
            }
        }
    }
    if let Some(event) = decoder.finish() {
        on_event(event)?;
    }
    Ok(())
}

pub(crate) fn network(url: &str, e: &reqwest::Error) -> LlmError {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let host = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str().map(|h| match u.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_string(),
            })
        })
        .unwrap_or_default();
    LlmError::new(
        ErrorKind::Transient,
        format!("cannot reach the model provider at {host}: {cause}"),
    )
}
