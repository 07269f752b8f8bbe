//! The one outbound HTTP client for URLs that come from command or tool arguments (`rss`,
//! `web_fetch`, anything later): every hop passes the [`NetworkPolicy`], the connection goes to
//! the address that was checked (a second DNS answer cannot rebind it), and redirects are
//! followed by hand — each target must be http(s) and is checked again — up to a limit.
//! Callers keep their own wording of failures; the mechanism is here once.

use std::time::Duration;

use reqwest::header::{self, HeaderMap};
use reqwest::{StatusCode, Url};

use crate::net::{header_text, http_client_builder};
use crate::net_policy::{NetRefusal, NetworkPolicy};

/// One GET through the policy.
#[derive(Debug, Clone)]
pub struct PolicedGet<'a> {
    /// Where requests may go.
    pub policy: &'a NetworkPolicy,
    /// The `User-Agent`.
    pub user_agent: &'static str,
    /// Headers sent on every hop (conditional-request validators, …).
    pub headers: HeaderMap,
    /// Limit for each hop's whole exchange; `None` leaves it to the caller.
    pub timeout: Option<Duration>,
    /// Most redirects followed.
    pub max_redirects: usize,
}

/// A final answer (anything but a redirect; `304 Not Modified` is an answer).
#[derive(Debug)]
pub struct Answer {
    /// The response, its body not yet read.
    pub response: reqwest::Response,
    /// The URL that answered.
    pub url: Url,
}

/// Why no answer came.
#[derive(Debug)]
pub enum OutboundError {
    /// The policy refused a hop (the first URL or a redirect target).
    Refused {
        /// Why, and which setting would allow it.
        refusal: NetRefusal,
        /// Redirects followed before the refusal.
        redirects: Vec<Url>,
    },
    /// The exchange with `url` failed (connection, TLS, timeout, a cut-off answer).
    Network {
        /// The URL being fetched.
        url: Url,
        /// The cause.
        source: reqwest::Error,
    },
    /// A redirect that cannot be followed.
    Redirect(Box<BadRedirect>),
    /// The HTTP client could not be built (the message carries the cause). Not a missing trust
    /// store: that fails the handshake, as [`OutboundError::Network`].
    Client(String),
}

/// A redirect that cannot be followed.
#[derive(Debug)]
pub struct BadRedirect {
    /// The URL that redirected.
    pub from: Url,
    /// Its status.
    pub status: StatusCode,
    /// What is wrong with it.
    pub problem: RedirectProblem,
    /// Redirects followed before this one.
    pub redirects: Vec<Url>,
}

/// What is wrong with a redirect.
#[derive(Debug)]
pub enum RedirectProblem {
    /// No `Location` header.
    NoLocation,
    /// A `Location` that is not a URL.
    NotAUrl {
        /// The header as sent.
        location: String,
        /// Why it does not parse.
        error: String,
    },
    /// A target that is not http or https.
    Scheme(Url),
    /// More than the allowed number of redirects; the next target.
    TooMany(Url),
}

impl PolicedGet<'_> {
    /// Fetches `url`, following redirects.
    ///
    /// # Errors
    /// An [`OutboundError`] for a refused hop, a failed exchange or a broken redirect.
    pub async fn send(&self, url: Url) -> Result<Answer, OutboundError> {
        let mut url = url;
        let mut redirects: Vec<Url> = Vec::new();
        loop {
            let addr = match self.policy.check(&url).await {
                Ok(addr) => addr,
                Err(refusal) => return Err(OutboundError::Refused { refusal, redirects }),
            };
            let client = self.client(&url, addr)?;
            let response = match client.get(url.clone()).send().await {
                Ok(response) => response,
                Err(source) => return Err(OutboundError::Network { url, source }),
            };
            let status = response.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return Ok(Answer { response, url });
            }
            let next = match self.next_hop(&url, response.headers(), redirects.len()) {
                Ok(next) => next,
                Err(problem) => {
                    return Err(OutboundError::Redirect(Box::new(BadRedirect {
                        from: url,
                        status,
                        problem,
                        redirects,
                    })));
                }
            };
            redirects.push(next.clone());
            url = next;
        }
    }

    /// The target of a redirect from `from`, after `followed` others.
    fn next_hop(
        &self,
        from: &Url,
        headers: &HeaderMap,
        followed: usize,
    ) -> Result<Url, RedirectProblem> {
        let location =
            header_text(headers, &header::LOCATION).ok_or(RedirectProblem::NoLocation)?;
        let next = from.join(&location).map_err(|e| RedirectProblem::NotAUrl {
            location: location.clone(),
            error: e.to_string(),
        })?;
        if !matches!(next.scheme(), "http" | "https") {
            return Err(RedirectProblem::Scheme(next));
        }
        if followed >= self.max_redirects {
            return Err(RedirectProblem::TooMany(next));
        }
        Ok(next)
    }

    /// A client that connects to `addr` (checked by the policy) for `url`'s host, without
    /// following redirects itself.
    fn client(
        &self,
        url: &Url,
        addr: std::net::SocketAddr,
    ) -> Result<reqwest::Client, OutboundError> {
        let mut builder = http_client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(self.user_agent)
            .default_headers(self.headers.clone());
        if let Some(host) = url.host_str() {
            builder = builder.resolve(host.trim_start_matches('[').trim_end_matches(']'), addr);
        }
        if let Some(timeout) = self.timeout {
            builder = builder.timeout(timeout);
        }
        builder.build().map_err(|e| {
            // reqwest says only "builder error"; the cause is at the end of the chain.
            OutboundError::Client(format!(
                "cannot set up the HTTP client: {}",
                crate::net::root_cause(&e)
            ))
        })
    }
}
