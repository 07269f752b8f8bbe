//! HTTP helpers shared by everything that talks to servers (`rss`, `cal`, MCP, the channels): a
//! client builder with the shared TLS set-up, readable transport errors, and header access.

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName};

use crate::{CommandError, ErrorCode};

/// A client builder with the TLS set-up the process shares ([`lurkbot_core::tls`]: the
/// platform's roots, read once and only when a server certificate is checked).
pub fn http_client_builder() -> reqwest::ClientBuilder {
    let config = lurkbot_core::tls::client_config();
    reqwest::Client::builder().tls_backend_preconfigured(rustls::ClientConfig::clone(&config))
}

/// The innermost error message (e.g. "Connection refused (os error 111)").
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// `host:port` (or the host alone) for messages; never the path, which may carry tokens.
pub(crate) fn host_of(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        _ => url.to_string(),
    }
}

/// A header's trimmed text, when present, readable and not empty.
pub(crate) fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A transport failure (DNS, refused connection, TLS, timeout, cut-off body) as a
/// `NetworkError`; `slow_hint` says what to do about a timeout.
pub(crate) fn network_error(url: &Url, e: &reqwest::Error, slow_hint: &str) -> CommandError {
    let cause = root_cause(e);
    let host = host_of(url);
    let (message, hint) = if e.is_timeout() {
        (format!("{host} did not answer in time: {cause}"), slow_hint)
    } else if cause.contains(lurkbot_core::tls::NO_ROOTS) {
        (
            format!("cannot connect securely to {host}: {cause}"),
            lurkbot_core::tls::NO_ROOTS_HINT,
        )
    } else if cause.contains("certificate") {
        (
            format!("cannot connect securely to {host}: {cause}"),
            "the server's TLS certificate could not be verified; check the address, the system's CA certificates and the clock",
        )
    } else if e.is_connect() {
        (
            format!("cannot connect to {host}: {cause}"),
            "check the address and your network (DNS, proxy, firewall), then retry",
        )
    } else if e.is_body() || e.is_decode() {
        (
            format!("the answer from {host} was cut off or could not be decoded: {cause}"),
            "retry later; the connection or the server's compression failed",
        )
    } else {
        (
            format!("request to {host} failed: {cause}"),
            "check the address and your network, then retry",
        )
    };
    CommandError::new(ErrorCode::NetworkError, message).with_hint(hint)
}
