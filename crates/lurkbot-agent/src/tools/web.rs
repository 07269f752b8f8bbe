//! `web_fetch`: GET one http(s) URL and return its text.
//!
//! Safe by default: every URL, the first and each redirect, passes the shared network policy
//! ([`NetworkPolicy`]: http/https only, no credentials, public addresses only unless `[network]
//! allow_private` or `allow_hosts` say otherwise). The connection is pinned to the address that
//! was checked (no DNS rebinding), redirects are followed by hand (at most 5). At
//! most `max_bytes` are read; HTML is turned into plain text (scripts and styles dropped).

use std::time::Duration;

use lurkbot_core::WebFetchConfig;
use lurkbot_llm::ToolSpec;
use lurkbot_term::{NetworkPolicy, OutboundError, PolicedGet, RedirectProblem};
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, string_arg};
use lurkbot_core::html_to_text;

/// Most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// The `web_fetch` tool.
pub(crate) struct WebFetchTool;

impl Tool for WebFetchTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_fetch".into(),
            description: "Fetch one web page or file over http(s) and return its text (HTML is converted to plain text). Private and local addresses are refused.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "an http:// or https:// URL"}
                },
                "required": ["url"]
            }),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let url = match string_arg(args, "url") {
                Ok(u) => u,
                Err(e) => return e,
            };
            let policy = NetworkPolicy::from_config(ctx.config);
            match fetch(url, &policy, &ctx.config.tools.web_fetch).await {
                Ok(text) => ToolOutput::ok(text),
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

async fn fetch(
    start: &str,
    policy: &NetworkPolicy,
    config: &WebFetchConfig,
) -> Result<String, String> {
    let url = reqwest::Url::parse(start).map_err(|e| format!("not a URL: {start} ({e})"))?;
    let get = PolicedGet {
        policy,
        user_agent: concat!("LurkBot/", env!("CARGO_PKG_VERSION")),
        headers: reqwest::header::HeaderMap::new(),
        timeout: Some(Duration::from_secs(config.timeout_seconds.max(1))),
        max_redirects: MAX_REDIRECTS,
    };
    match get.send(url).await {
        Ok(answer) => read_body(answer.url.as_str(), answer.response, config.max_bytes).await,
        Err(OutboundError::Refused { refusal, .. }) => Err(refusal.to_string()),
        Err(OutboundError::Network { url, source }) => Err(format!(
            "cannot fetch {url}: {}",
            lurkbot_term::root_cause(&source)
        )),
        Err(OutboundError::Client(message)) => Err(message),
        Err(OutboundError::Redirect(bad)) => Err(match bad.problem {
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
        }),
    }
}

async fn read_body(
    url: &str,
    mut response: reqwest::Response,
    max_bytes: u64,
) -> Result<String, String> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let textual = content_type.is_empty()
        || content_type.starts_with("text/")
        || ["json", "xml", "javascript", "yaml", "csv"]
            .iter()
            .any(|t| content_type.contains(t));
    if !textual {
        return Err(format!(
            "{url} is '{content_type}', not text; only text, HTML, JSON and XML are returned"
        ));
    }
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading {url} failed: {}", lurkbot_term::root_cause(&e)))?
    {
        let room = usize::try_from(max_bytes).unwrap_or(usize::MAX) - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let raw = String::from_utf8_lossy(&body);
    let text =
        if content_type.contains("html") || (content_type.is_empty() && raw.contains("<html")) {
            html_to_text(&raw)
        } else {
            raw.into_owned()
        };
    let mut out = format!("URL: {url}\nStatus: {}\n\n{text}", status.as_u16());
    if truncated {
        out.push_str(&format!("\n[cut: the answer is over {max_bytes} bytes]"));
    }
    if status.is_success() {
        Ok(out)
    } else {
        Err(out)
    }
}
