//! `web_fetch` (ARCHITECTURE.md §5.2): GET one http(s) URL and return its readable content.
//!
//! Every hop — the first URL and each redirect — passes the network rules the gate gives a URL
//! from outside the owner's settings ([`crate::gate::web_rules`]: http/https only, no
//! credentials, public addresses unless `[network]` allows more), the connection is pinned to
//! the address that was checked, and at most 5 redirects are followed. At most `max_bytes` are
//! read. HTML becomes its article ([`super::article`]) as Markdown or text; other textual types
//! come back as they are; answers are kept 15 minutes.

use std::time::{Duration, Instant};

use lurkbot_core::{Config, Home};
use lurkbot_term::{NetworkPolicy, OutboundError, PolicedGet, RedirectProblem};

use super::article::{ExtractMode, extract};
use super::cache::TtlCache;

/// Most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// Characters returned when the model does not say; also the most it may ask for (the context
/// takes no more of one tool result).
pub const MAX_CHARS: usize = 20_000;

/// One fetch.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The URL.
    pub url: String,
    /// Markdown or text.
    pub mode: ExtractMode,
    /// Most characters of content returned.
    pub max_chars: usize,
}

static CACHE: TtlCache = TtlCache::new(32, 4 << 20);

/// Fetches `request.url` for `session` under the rules of a URL from outside the settings.
///
/// # Errors
/// What went wrong, for the model: a refusal naming the setting that allows it, a network
/// failure, a type that is not text, or an error status (with the page's text).
pub async fn fetch_page(
    home: &Home,
    config: &Config,
    request: &FetchRequest,
    session: &str,
) -> Result<String, String> {
    let policy = crate::gate::web_rules(crate::gate::UrlFrom::Elsewhere, config);
    let max_chars = request.max_chars.clamp(1, MAX_CHARS);
    let key = format!(
        "{}\u{1f}{:?}\u{1f}{max_chars}\u{1f}{policy:?}",
        request.url, request.mode
    );
    let (outcome, cached) = match CACHE.get(&key, Instant::now()) {
        Some(kept) => (Ok(kept), true),
        None => {
            let outcome = fetch(&request.url, &policy, config, request.mode, max_chars).await;
            if let Ok(text) = &outcome {
                CACHE.put(&key, text, Instant::now());
            }
            (outcome, false)
        }
    };
    super::log::record(
        home,
        &super::log::WebRecord {
            session,
            tool: "web_fetch",
            target: &request.url,
            provider: "",
            count: outcome.as_ref().ok().map(|t| t.chars().count()),
            error: outcome.as_ref().err().map(String::as_str),
            cached,
        },
    );
    outcome
}

async fn fetch(
    start: &str,
    policy: &NetworkPolicy,
    config: &Config,
    mode: ExtractMode,
    max_chars: usize,
) -> Result<String, String> {
    let settings = &config.tools.web_fetch;
    let url = reqwest::Url::parse(start).map_err(|e| format!("not a URL: {start} ({e})"))?;
    let get = PolicedGet {
        policy,
        user_agent: concat!("LurkBot/", env!("CARGO_PKG_VERSION")),
        headers: reqwest::header::HeaderMap::new(),
        timeout: Some(Duration::from_secs(settings.timeout_seconds.max(1))),
        max_redirects: MAX_REDIRECTS,
    };
    let answer = match get.send(url).await {
        Ok(answer) => answer,
        Err(e) => return Err(describe(start, e)),
    };
    let page = read_body(answer.url.as_str(), answer.response, settings.max_bytes).await?;
    let status = page.status;
    let url = answer.url.to_string();
    let text = if page.html {
        let (raw, url_for) = (page.text, url.clone());
        tokio::task::spawn_blocking(move || render(&raw, &url_for, mode))
            .await
            .map_err(|e| format!("reading {url} failed: {e}"))?
    } else {
        page.text
    };
    let mut out = format!("URL: {url}\nStatus: {status}\n");
    if page.truncated {
        out.push_str(&format!(
            "Note: only the first {} bytes were read\n",
            settings.max_bytes
        ));
    }
    out.push('\n');
    let total = text.chars().count();
    if total > max_chars {
        out.extend(text.chars().take(max_chars));
        out.push_str(&format!(
            "\n[cut: {} more characters past maxChars = {max_chars}]",
            total - max_chars
        ));
    } else {
        out.push_str(&text);
    }
    if (200..300).contains(&status) {
        Ok(out)
    } else {
        Err(out)
    }
}

/// The article of an HTML page, headed by its title and dates.
fn render(html: &str, url: &str, mode: ExtractMode) -> String {
    let article = extract(html, url, mode);
    let mut out = String::new();
    if let Some(title) = &article.title {
        out.push_str(&format!("Title: {title}\n"));
    }
    if let Some(byline) = &article.byline {
        out.push_str(&format!("By: {byline}\n"));
    }
    if let Some(published) = &article.published {
        out.push_str(&format!("Published: {published}\n"));
    }
    if article.whole_page {
        out.push_str("Note: no article found; this is all of the page's visible text\n");
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&article.body);
    out
}

fn describe(start: &str, error: OutboundError) -> String {
    match error {
        OutboundError::Refused { refusal, .. } => refusal.to_string(),
        OutboundError::Network { url, source } => {
            format!("cannot fetch {url}: {}", lurkbot_term::root_cause(&source))
        }
        OutboundError::Client(message) => message,
        OutboundError::Redirect(bad) => match bad.problem {
            RedirectProblem::NoLocation => {
                format!("{} answered {} without a Location", bad.from, bad.status)
            }
            RedirectProblem::NotAUrl { error, .. } => {
                format!("bad redirect from {}: {error}", bad.from)
            }
            RedirectProblem::Scheme(next) => format!(
                "{} redirected to {next}: only http and https are followed",
                bad.from
            ),
            RedirectProblem::TooMany(_) => {
                format!("more than {MAX_REDIRECTS} redirects from {start}")
            }
        },
    }
}

struct Page {
    status: u16,
    html: bool,
    text: String,
    truncated: bool,
}

async fn read_body(
    url: &str,
    mut response: reqwest::Response,
    max_bytes: u64,
) -> Result<Page, String> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let textual = content_type.is_empty()
        || content_type.starts_with("text/")
        || ["json", "xml", "javascript", "yaml", "csv", "markdown"]
            .iter()
            .any(|t| content_type.contains(t));
    if !textual {
        return Err(format!(
            "{url} is '{content_type}', not text; web_fetch returns text, HTML, JSON and XML (use image for pictures)"
        ));
    }
    let mut body = Vec::new();
    let mut truncated = false;
    let limit = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading {url} failed: {}", lurkbot_term::root_cause(&e)))?
    {
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    let html = content_type.contains("html")
        || (content_type.is_empty() && {
            let head: String = text
                .chars()
                .take(1024)
                .collect::<String>()
                .to_ascii_lowercase();
            head.contains("<html") || head.contains("<!doctype html")
        });
    Ok(Page {
        status,
        html,
        text,
        truncated,
    })
}
