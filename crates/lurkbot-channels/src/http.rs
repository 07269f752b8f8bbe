//! The HTTP client the platforms share, and how their answers are classified for the retry
//! policy. Errors never carry the request URL: some platforms put the token in it.

use std::time::Duration;

use crate::ChannelError;

/// The client (with the TLS set-up the process shares); `read` is the longest
/// silence accepted (a long poll's wait plus a margin).
pub(crate) fn client(read: Duration) -> Result<reqwest::Client, ChannelError> {
    lurkbot_term::http_client_builder()
        .user_agent(concat!("LurkBot/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(20))
        .read_timeout(read)
        .build()
        .map_err(|e| ChannelError::Permanent(format!("cannot build the HTTP client: {e}")))
}

/// A network failure, without the URL.
pub(crate) fn network(what: &str, error: reqwest::Error) -> ChannelError {
    ChannelError::Transient(format!("{what}: {}", error.without_url()))
}

/// An HTTP status and the platform's description, classified: 429 waits `retry_after`
/// (default 1 s), 5xx is transient, anything else is permanent.
pub(crate) fn classify(status: u16, description: &str, retry_after: Option<u64>) -> ChannelError {
    let text = format!("{status} {description}");
    match status {
        429 => ChannelError::RetryAfter(Duration::from_secs(retry_after.unwrap_or(1)), text),
        500..=599 => ChannelError::Transient(text),
        _ => ChannelError::Permanent(text),
    }
}
