//! Downloading a feed: conditional GET, redirects followed by hand (at most [`MAX_REDIRECTS`],
//! each target re-checked: http or https only), one deadline for the whole exchange, and a
//! body cap counted on the decoded bytes while they stream in (gzip/deflate are decoded within
//! the same cap, so a compression bomb stops at the cap too).
//!
//! Proxies come from the usual `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` variables.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::Value;

use crate::net::{header_text, host_of, network_error};
use crate::outbound::{Answer, BadRedirect, OutboundError, PolicedGet, RedirectProblem};
use crate::{CommandError, ErrorCode, NetRefusal, NetworkPolicy};

/// Most redirects followed for one fetch.
pub(super) const MAX_REDIRECTS: usize = 5;

/// What to ask for.
#[derive(Debug, Clone)]
pub(super) struct FetchRequest {
    /// The feed URL (already checked to be http or https).
    pub(super) url: Url,
    /// `If-None-Match` value.
    pub(super) etag: Option<String>,
    /// `If-Modified-Since` value.
    pub(super) last_modified: Option<String>,
    /// Deadline for the whole exchange, redirects and body included.
    pub(super) timeout: Duration,
    /// Most body bytes accepted (after decompression).
    pub(super) max_bytes: u64,
    /// Where the feed and its redirects may lead (ARCHITECTURE.md §4.6).
    pub(super) policy: NetworkPolicy,
}

/// A successful exchange.
#[derive(Debug, Clone)]
pub(super) struct Fetched {
    /// 200-299, or 304.
    pub(super) status: u16,
    /// The URL that answered, after redirects.
    pub(super) final_url: Url,
    /// `ETag` of the answer.
    pub(super) etag: Option<String>,
    /// `Last-Modified` of the answer.
    pub(super) last_modified: Option<String>,
    /// `Content-Type` of the answer.
    pub(super) content_type: Option<String>,
    /// The decoded body (empty for 304).
    pub(super) body: Vec<u8>,
}

impl Fetched {
    /// Whether the server said the stored copy is still current.
    pub(super) fn not_modified(&self) -> bool {
        self.status == StatusCode::NOT_MODIFIED.as_u16()
    }
}

/// A failed exchange: the error for the envelope and the HTTP status, if one came.
#[derive(Debug, Clone)]
pub(super) struct FetchFailure {
    /// The HTTP status of the last answer, if any.
    pub(super) status: Option<u16>,
    /// What to report.
    pub(super) error: CommandError,
}

/// Checks a URL given by the user: http or https, a host, no credentials.
///
/// # Errors
/// `InvalidArgs` saying what is wrong.
pub(super) fn check_url(raw: &str) -> Result<Url, CommandError> {
    let invalid = |why: String| {
        CommandError::new(ErrorCode::InvalidArgs, why)
            .with_hint("give a full feed address such as https://example.com/feed.xml")
    };
    let url = Url::parse(raw.trim()).map_err(|e| invalid(format!("'{raw}' is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "only http:// and https:// feeds are fetched, not {}://",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(format!("'{raw}' has no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(CommandError::new(
            ErrorCode::SensitiveArgv,
            "credentials in the URL would be written to the audit log and were refused",
        )
        .with_hint("use a feed address without user:password@"));
    }
    let mut url = url;
    url.set_fragment(None);
    Ok(url)
}

/// Fetches `request.url`.
///
/// # Errors
/// A [`FetchFailure`] with `NetworkError`, `HttpError`, `RateLimited` or `ResponseTooLarge`.
pub(super) async fn fetch(request: &FetchRequest) -> Result<Fetched, FetchFailure> {
    let millis = request.timeout.as_millis();
    match tokio::time::timeout(request.timeout, exchange(request)).await {
        Ok(result) => result,
        Err(_) => Err(FetchFailure {
            status: None,
            error: CommandError::new(
                ErrorCode::NetworkError,
                format!(
                    "no complete answer from {} within {millis} ms",
                    host_of(&request.url)
                ),
            )
            .with_hint("the server is slow or unreachable; retry later or raise --timeout-ms"),
        }),
    }
}

/// The network policy's refusal as a failure: `PermissionDenied` for an address it does not
/// allow, `NetworkError` when the host cannot be resolved, `InvalidArgs` otherwise.
fn refused(refusal: NetRefusal, redirects: &[Value]) -> FetchFailure {
    let (code, hint) = match &refusal {
        NetRefusal::Private { .. } => (
            ErrorCode::PermissionDenied,
            "feeds on this machine or a private network need [network] allow_private = true or the host in [network] allow_hosts (config.toml)",
        ),
        NetRefusal::Resolve { .. } => (
            ErrorCode::NetworkError,
            "check the address and your network (DNS), then retry",
        ),
        _ => (
            ErrorCode::InvalidArgs,
            "give a full feed address such as https://example.com/feed.xml",
        ),
    };
    let mut error = CommandError::new(code, refusal.to_string()).with_hint(hint);
    if !redirects.is_empty() {
        error = error.with_detail("redirects", Value::Array(redirects.to_vec()));
    }
    FetchFailure {
        status: None,
        error,
    }
}

async fn exchange(request: &FetchRequest) -> Result<Fetched, FetchFailure> {
    let get = PolicedGet {
        policy: &request.policy,
        user_agent: concat!("LurkBot/", env!("CARGO_PKG_VERSION"), " (rss)"),
        headers: conditional_headers(request),
        timeout: None,
        max_redirects: MAX_REDIRECTS,
    };
    let Answer { response, url } = get
        .send(request.url.clone())
        .await
        .map_err(outbound_failure)?;
    let status = response.status();
    if status == StatusCode::TOO_MANY_REQUESTS {
        let mut error = CommandError::new(
            ErrorCode::RateLimited,
            format!("{} answered 429 Too Many Requests", host_of(&url)),
        )
        .with_detail("http_status", 429);
        let wait = retry_after_ms(response.headers(), Utc::now());
        if let Some(ms) = wait {
            error = error.with_detail("retry_after_ms", ms);
        }
        error = error.with_hint(match wait {
            Some(ms) => format!(
                "wait {} s before fetching this feed again",
                ms.div_ceil(1000)
            ),
            None => "wait a while before fetching this feed again".to_string(),
        });
        return Err(FetchFailure {
            status: Some(429),
            error,
        });
    }
    if !status.is_success() && status != StatusCode::NOT_MODIFIED {
        return Err(http_failure(&url, status, response.headers()));
    }
    let etag = header_text(response.headers(), &header::ETAG);
    let last_modified = header_text(response.headers(), &header::LAST_MODIFIED);
    let content_type = header_text(response.headers(), &header::CONTENT_TYPE);
    let body = if status == StatusCode::NOT_MODIFIED {
        Vec::new()
    } else {
        read_capped(response, &url, request.max_bytes).await?
    };
    Ok(Fetched {
        status: status.as_u16(),
        final_url: url,
        etag,
        last_modified,
        content_type,
        body,
    })
}

fn conditional_headers(request: &FetchRequest) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_static(
            "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5",
        ),
    );
    if let Some(v) = request
        .etag
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        headers.insert(header::IF_NONE_MATCH, v);
    }
    if let Some(v) = request
        .last_modified
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        headers.insert(header::IF_MODIFIED_SINCE, v);
    }
    headers
}

/// A failure of the outbound client, in the words `rss fetch` reports.
fn outbound_failure(error: OutboundError) -> FetchFailure {
    let chain = |redirects: &[Url]| -> Vec<Value> {
        redirects.iter().map(|u| Value::from(u.as_str())).collect()
    };
    match error {
        OutboundError::Refused { refusal, redirects } => refused(refusal, &chain(&redirects)),
        OutboundError::Network { url, source } => network_failure(&url, &source),
        OutboundError::Client(message) => FetchFailure {
            status: None,
            error: CommandError::new(ErrorCode::Internal, message),
        },
        OutboundError::Redirect(bad) => {
            let BadRedirect {
                from,
                status,
                problem,
                redirects,
            } = *bad;
            let code = status.as_u16();
            let broken = "the server's redirect is broken; try the feed's address in a browser";
            let (message, hint) = match problem {
                RedirectProblem::NoLocation => (
                    format!("{} answered {code} without a Location", host_of(&from)),
                    broken,
                ),
                RedirectProblem::NotAUrl { location, error } => (
                    format!(
                        "{} redirected to '{location}', which is not a URL: {error}",
                        host_of(&from)
                    ),
                    broken,
                ),
                RedirectProblem::Scheme(next) => (
                    format!(
                        "{} redirected to a {}:// URL, which is refused: only http and https are followed",
                        host_of(&from),
                        next.scheme()
                    ),
                    "this feed cannot be fetched safely; tell its owner or use another feed",
                ),
                RedirectProblem::TooMany(next) => (
                    format!("more than {MAX_REDIRECTS} redirects (last to {next})"),
                    "the server redirects in a loop or too often; subscribe to the final address instead",
                ),
            };
            FetchFailure {
                status: Some(code),
                error: CommandError::new(ErrorCode::HttpError, message)
                    .with_hint(hint)
                    .with_detail("http_status", code)
                    .with_detail("redirects", Value::Array(chain(&redirects))),
            }
        }
    }
}

fn http_failure(url: &Url, status: StatusCode, headers: &HeaderMap) -> FetchFailure {
    let code = status.as_u16();
    let reason = status.canonical_reason().unwrap_or("error");
    let hint = match code {
        404 | 410 => "the feed is gone from this address; check the URL or remove the subscription",
        401 | 403 => "the server refuses access; the feed may need a login, which rss does not do",
        500..=599 => "the server is having trouble; retry later",
        _ => "check the URL; the server does not serve a feed there",
    };
    let mut error = CommandError::new(
        ErrorCode::HttpError,
        format!("{} answered {code} {reason}", host_of(url)),
    )
    .with_hint(hint)
    .with_detail("http_status", code);
    if let Some(ms) = retry_after_ms(headers, Utc::now()) {
        error = error.with_detail("retry_after_ms", ms);
    }
    FetchFailure {
        status: Some(code),
        error,
    }
}

async fn read_capped(
    mut response: reqwest::Response,
    url: &Url,
    max_bytes: u64,
) -> Result<Vec<u8>, FetchFailure> {
    let status = response.status().as_u16();
    let too_large = || FetchFailure {
        status: Some(status),
        error: CommandError::new(
            ErrorCode::ResponseTooLarge,
            format!(
                "the feed from {} is larger than --max-bytes {max_bytes}; nothing was stored",
                host_of(url)
            ),
        )
        .with_hint("raise --max-bytes if the feed is really that large")
        .with_detail("max_bytes", max_bytes),
    };
    if response.content_length().is_some_and(|n| n > max_bytes) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| network_failure(url, &e))?
    {
        if (body.len() + chunk.len()) as u64 > max_bytes {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn network_failure(url: &Url, e: &reqwest::Error) -> FetchFailure {
    FetchFailure {
        status: e.status().map(|s| s.as_u16()),
        error: network_error(url, e, "retry later or raise --timeout-ms"),
    }
}

/// `Retry-After` in milliseconds from `now`: delay-seconds or an HTTP date (a past date is 0).
pub(super) fn retry_after_ms(headers: &HeaderMap, now: DateTime<Utc>) -> Option<u64> {
    let raw = header_text(headers, &header::RETRY_AFTER)?;
    if let Ok(seconds) = raw.parse::<u64>() {
        return Some(seconds.saturating_mul(1000).min(MAX_RETRY_AFTER_MS));
    }
    let when = DateTime::parse_from_rfc2822(&raw).ok()?;
    let ms = (when.with_timezone(&Utc) - now).num_milliseconds();
    Some(u64::try_from(ms).unwrap_or(0).min(MAX_RETRY_AFTER_MS))
}

/// The longest wait a `Retry-After` is believed for (24 h): a server asking for more is wrong
/// or hostile, and a caller should not be told to wait until the year 9999.
const MAX_RETRY_AFTER_MS: u64 = 24 * 3600 * 1000;

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(retry: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::RETRY_AFTER, HeaderValue::from_str(retry).unwrap());
        h
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(retry_after_ms(&headers("120"), now), Some(120_000));
        assert_eq!(
            retry_after_ms(&headers("Sat, 21 Nov 2026 10:01:30 GMT"), now),
            Some(90_000)
        );
        assert_eq!(
            retry_after_ms(&headers("Sat, 21 Nov 2026 09:00:00 GMT"), now),
            Some(0)
        );
        assert_eq!(retry_after_ms(&headers("soon"), now), None);
        for absurd in ["Fri, 31 Dec 9999 23:59:59 GMT", "99999999999"] {
            assert_eq!(
                retry_after_ms(&headers(absurd), now),
                Some(86_400_000),
                "{absurd}"
            );
        }
        assert_eq!(retry_after_ms(&HeaderMap::new(), now), None);
    }

    #[test]
    fn urls_are_checked() {
        assert_eq!(
            check_url("https://e.com/f#x").unwrap().as_str(),
            "https://e.com/f"
        );
        for bad in [
            "file:///etc/passwd",
            "ftp://e.com/f",
            "e.com/feed",
            "http://",
            "javascript:alert(1)",
        ] {
            assert_eq!(
                check_url(bad).unwrap_err().code,
                ErrorCode::InvalidArgs,
                "{bad}"
            );
        }
        assert_eq!(
            check_url("https://u:p@e.com/").unwrap_err().code,
            ErrorCode::SensitiveArgv
        );
    }
}
