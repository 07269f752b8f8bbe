//! Bytes from a URL that did not come from the owner's settings (the `image` tool's URL, a
//! channel's attachment): one GET through the gate's web rules (`UrlFrom::Elsewhere`, every
//! hop), a status check and a size cap, shared by every fetcher of bytes so none grows a check
//! of its own. No error carries the URL: a platform's file URL can hold a token.

use std::time::Duration;

use lurkbot_core::Config;
use lurkbot_term::{OutboundError, PolicedGet};
use reqwest::header::HeaderMap;

/// Why no bytes came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DownloadError {
    /// Not a URL.
    #[error("not a valid URL")]
    NotAUrl,
    /// The network policy refused a hop; the text names the setting that allows it.
    #[error("{0}")]
    Refused(String),
    /// The exchange failed (connection, TLS, timeout, a cut-off answer).
    #[error("the download failed: {0}")]
    Network(String),
    /// A redirect that may not be followed.
    #[error("the download redirected somewhere it may not go")]
    Redirect,
    /// The server answered something other than success.
    #[error("the server answered HTTP {0}")]
    Status(u16),
    /// More than the cap.
    #[error("it is over {0} bytes")]
    TooLarge(u64),
    /// The HTTP client could not be made.
    #[error("{0}")]
    Client(String),
}

/// GETs `url` with `headers` under the rules of a URL from outside the settings, reading at
/// most `max` bytes within `timeout` per hop.
///
/// # Errors
/// A [`DownloadError`] without the URL.
pub async fn download(
    config: &Config,
    url: &str,
    headers: HeaderMap,
    timeout: Duration,
    max: u64,
) -> Result<Vec<u8>, DownloadError> {
    let policy = crate::gate::web_rules(crate::gate::UrlFrom::Elsewhere, config);
    let url = reqwest::Url::parse(url).map_err(|_| DownloadError::NotAUrl)?;
    let get = PolicedGet {
        policy: &policy,
        user_agent: concat!("LurkBot/", env!("CARGO_PKG_VERSION")),
        headers,
        timeout: Some(timeout),
        max_redirects: 5,
    };
    let mut response = match get.send(url).await {
        Ok(answer) => answer.response,
        Err(OutboundError::Refused { refusal, .. }) => {
            return Err(DownloadError::Refused(refusal.to_string()));
        }
        Err(OutboundError::Network { source, .. }) => {
            return Err(DownloadError::Network(lurkbot_term::root_cause(&source)));
        }
        Err(OutboundError::Redirect(_)) => return Err(DownloadError::Redirect),
        Err(OutboundError::Client(e)) => return Err(DownloadError::Client(e)),
    };
    if !response.status().is_success() {
        return Err(DownloadError::Status(response.status().as_u16()));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| DownloadError::Network(lurkbot_term::root_cause(&e)))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > max {
            return Err(DownloadError::TooLarge(max));
        }
    }
    Ok(bytes)
}
