//! The CalDAV wire (RFC 4791 over WebDAV): one HTTP client with the account's Basic
//! credentials, `PROPFIND`/`REPORT` answers read as multistatus, and server answers mapped to
//! stable error codes (401 → `AuthFailed`, 412 → `Conflict` by the caller, transport failures →
//! `NetworkError`). Each request has its own deadline and a body cap.

use std::time::Duration;

use reqwest::header::{self, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};

use super::multistatus::{self, Resource};
use crate::net::{header_text, host_of, http_client_builder, network_error};
use crate::{CommandError, ErrorCode};

/// Deadline of one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer read (a year of a busy calendar is a few MiB).
const MAX_BODY: usize = 32 << 20;
/// Where the credentials live, for hints.
pub(super) const CREDENTIALS_FILE: &str = "skills/calendar-cli/secrets/.env";

/// A server's answer.
#[derive(Debug)]
pub(super) struct Answer {
    /// HTTP status.
    pub(super) status: StatusCode,
    /// The `ETag` header, verbatim (quotes included), when sent.
    pub(super) etag: Option<String>,
    /// The body as text.
    pub(super) body: String,
}

/// A request body with its media type.
pub(super) struct Body {
    /// `Content-Type`.
    pub(super) mime: &'static str,
    /// The text.
    pub(super) text: String,
}

/// A precondition header (`If-Match` / `If-None-Match`).
pub(super) type Precondition<'a> = Option<(HeaderName, &'a str)>;

/// The HTTP side of one CalDAV account.
pub(super) struct Dav {
    client: reqwest::Client,
    user: Option<String>,
    password: Option<String>,
}

impl Dav {
    /// A client for the account (no credentials: requests go unauthenticated).
    ///
    /// # Errors
    /// `Internal` when the HTTP client cannot be built.
    pub(super) fn new(
        user: Option<String>,
        password: Option<String>,
    ) -> Result<Self, CommandError> {
        let client = http_client_builder()
            .redirect(reqwest::redirect::Policy::limited(5))
            .user_agent(concat!("LurkBot/", env!("CARGO_PKG_VERSION"), " (cal)"))
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| {
                CommandError::new(
                    ErrorCode::Internal,
                    format!("cannot build the HTTP client: {e}"),
                )
            })?;
        Ok(Self {
            client,
            user,
            password,
        })
    }

    /// Sends one request and reads the whole answer. A 401 becomes `AuthFailed`; every other
    /// status is returned for the caller to judge.
    ///
    /// # Errors
    /// `NetworkError`, `AuthFailed`, `ResponseTooLarge`.
    pub(super) async fn send(
        &self,
        method: &str,
        url: &Url,
        depth: Option<&str>,
        precondition: Precondition<'_>,
        body: Option<Body>,
    ) -> Result<Answer, CommandError> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| CommandError::new(ErrorCode::Internal, format!("bad method: {e}")))?;
        let mut request = self.client.request(method, url.clone());
        if let Some(user) = &self.user {
            request = request.basic_auth(user, self.password.as_deref());
        }
        if let Some(depth) = depth {
            request = request.header("Depth", depth);
        }
        if let Some((name, value)) = precondition
            && let Ok(value) = HeaderValue::from_str(value)
        {
            request = request.header(name, value);
        }
        if let Some(body) = body {
            request = request
                .header(header::CONTENT_TYPE, body.mime)
                .body(body.text);
        }
        let slow = "the calendar server is slow or unreachable; retry later";
        let mut response = request
            .send()
            .await
            .map_err(|e| network_error(url, &e, slow))?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED {
            return Err(CommandError::new(
                ErrorCode::AuthFailed,
                format!(
                    "the CalDAV server {} refused the credentials (401)",
                    host_of(url)
                ),
            )
            .with_hint(format!(
                "check CALDAV_USERNAME and CALDAV_PASSWORD in {CREDENTIALS_FILE}"
            ))
            .with_detail("http_status", 401));
        }
        let etag = header_text(response.headers(), &header::ETAG);
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| network_error(url, &e, slow))?
        {
            if bytes.len() + chunk.len() > MAX_BODY {
                return Err(CommandError::new(
                    ErrorCode::ResponseTooLarge,
                    format!(
                        "the answer from {} is larger than {} MiB",
                        host_of(url),
                        MAX_BODY >> 20
                    ),
                )
                .with_hint("ask for a shorter time range")
                .with_detail("max_bytes", MAX_BODY));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            etag,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    /// A `PROPFIND` (or `REPORT`) that must answer `207 Multi-Status`.
    ///
    /// # Errors
    /// As [`Dav::send`], plus `HttpError` for another status and `ParseError` for a body that
    /// is not a multistatus.
    pub(super) async fn multistatus(
        &self,
        method: &str,
        url: &Url,
        depth: &str,
        xml: String,
    ) -> Result<Vec<Resource>, CommandError> {
        let body = Body {
            mime: "application/xml; charset=utf-8",
            text: xml,
        };
        let answer = self
            .send(method, url, Some(depth), None, Some(body))
            .await?;
        if answer.status != StatusCode::MULTI_STATUS {
            return Err(status_error(url, answer.status));
        }
        multistatus::parse(&answer.body).map_err(|e| {
            CommandError::new(
                ErrorCode::ParseError,
                format!("{} sent an unreadable {method} answer: {e}", host_of(url)),
            )
            .with_hint("check that calendar.url points at a CalDAV server")
        })
    }
}

/// An unexpected status as a stable error.
pub(super) fn status_error(url: &Url, status: StatusCode) -> CommandError {
    let code = status.as_u16();
    let reason = status.canonical_reason().unwrap_or("error");
    let message = format!(
        "the CalDAV server {} answered {code} {reason}",
        host_of(url)
    );
    let (error, hint) = match code {
        429 => (
            ErrorCode::RateLimited,
            "the server asks to slow down; wait a while and retry",
        ),
        403 => (
            ErrorCode::HttpError,
            "the account may not touch this calendar; check calendar.url and the account's rights",
        ),
        404 | 405 => (
            ErrorCode::HttpError,
            "check calendar.url: it should be the server's CalDAV address, a principal or a calendar",
        ),
        500..=599 => (
            ErrorCode::HttpError,
            "the server is having trouble; retry later (nothing was changed here)",
        ),
        _ => (ErrorCode::HttpError, "check calendar.url and the server"),
    };
    CommandError::new(error, message)
        .with_hint(hint)
        .with_detail("http_status", code)
}
