//! What every search provider's client shares: the failure kinds (each but a bad query moves
//! on to the next provider), the one HTTP client, endpoints, and reading an answer.

use std::time::Duration;

use lurkbot_core::WebSearchConfig;
use reqwest::{Response, StatusCode};

/// Why a provider gave no results; every kind but a bad query moves on to the next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Failure {
    /// Its key or URL is missing.
    #[error("not set up ({0})")]
    NotSetUp(String),
    /// It refused the key.
    #[error("refused the key (HTTP {status}); check {variable} in the home's .env")]
    KeyRefused {
        /// The status.
        status: u16,
        /// The variable holding the key.
        variable: &'static str,
    },
    /// It limits the rate.
    #[error("rate limited{}", .0.map(|s| format!(" (retry after {s} s)")).unwrap_or_default())]
    RateLimited(Option<u64>),
    /// It refused the query itself (HTTP 400/422 not about the key).
    #[error("refused the query: {0}")]
    BadQuery(String),
    /// It could not be reached, failed, or answered something unreadable.
    #[error("{0}")]
    Outage(String),
}

/// The one HTTP client a search asks its providers with.
pub(super) fn client(settings: &WebSearchConfig) -> Result<reqwest::Client, Failure> {
    crate::web::settings_client(Duration::from_secs(settings.timeout_seconds.max(1)))
        .map_err(Failure::Outage)
}

/// A base URL with `path` appended (`https://host:port/base` + `/res/v1/web/search`).
pub(super) fn endpoint(base: &str, path: &str) -> Result<reqwest::Url, Failure> {
    let joined = format!("{}{path}", base.trim_end_matches('/'));
    reqwest::Url::parse(&joined)
        .map_err(|e| Failure::NotSetUp(format!("'{base}' is not a base URL: {e}")))
}

/// A request's failure to reach the provider.
pub(super) fn unreachable(error: &reqwest::Error) -> Failure {
    Failure::Outage(format!(
        "cannot reach it: {}",
        lurkbot_term::root_cause(error)
    ))
}

/// The body of a successful answer, or the failure its status means.
pub(super) async fn answer_text(
    response: Response,
    key_variable: Option<&'static str>,
) -> Result<String, Failure> {
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let body = response.text().await.map_err(|e| {
        Failure::Outage(format!(
            "its answer was cut off: {}",
            lurkbot_term::root_cause(&e)
        ))
    })?;
    if status.is_success() {
        return Ok(body);
    }
    let excerpt: String = body.chars().take(200).collect();
    Err(match status {
        StatusCode::TOO_MANY_REQUESTS => Failure::RateLimited(retry_after),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => match key_variable {
            Some(variable) => Failure::KeyRefused {
                status: status.as_u16(),
                variable,
            },
            None => Failure::Outage(format!("HTTP {}: {excerpt}", status.as_u16())),
        },
        s if s.is_server_error() => Failure::Outage(format!("HTTP {}", s.as_u16())),
        s => Failure::BadQuery(format!("HTTP {}: {excerpt}", s.as_u16())),
    })
}

/// Text with white space runs made one space and HTML tags the provider left (`<strong>`)
/// removed.
pub(super) fn clean(text: &str) -> String {
    let decoded = lurkbot_core::decode_html_entities(text);
    let mut out = String::with_capacity(decoded.len());
    let mut in_tag = false;
    for c in decoded.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            c if c.is_whitespace() => {
                if !out.ends_with(' ') && !out.is_empty() {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    out.trim_end().to_string()
}
