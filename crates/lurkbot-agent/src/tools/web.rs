//! `web_fetch`: GET one http(s) URL and return its text.
//!
//! Safe by default: only `http`/`https`, no credentials in the URL, and every address the host
//! resolves to must be public — loopback, private, link-local (cloud metadata), CGNAT, unique
//! local, multicast and unspecified addresses are refused unless `[tools.web_fetch]
//! allow_private = true`. The connection is pinned to the address that was checked (no DNS
//! rebinding), redirects are followed by hand (at most 5) and every hop is checked again. At
//! most `max_bytes` are read; HTML is turned into plain text (scripts and styles dropped).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use lurkbot_core::WebFetchConfig;
use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::html::html_to_text;
use super::{Tool, ToolCtx, ToolFuture, ToolOutput, string_arg};

/// Most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// The `web_fetch` tool.
pub struct WebFetchTool;

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
            match fetch(url, &ctx.config.tools.web_fetch).await {
                Ok(text) => ToolOutput::ok(text),
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

async fn fetch(start: &str, config: &WebFetchConfig) -> Result<String, String> {
    let mut url = reqwest::Url::parse(start).map_err(|e| format!("not a URL: {start} ({e})"))?;
    for _ in 0..=MAX_REDIRECTS {
        let addr = checked_address(&url, config.allow_private).await?;
        let host = url.host_str().unwrap_or_default().to_string();
        let client = client(&host, addr, config.timeout_seconds)?;
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| format!("cannot fetch {url}: {}", lurkbot_term::root_cause(&e)))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("{url} answered {status} without a Location"))?;
            url = url
                .join(location)
                .map_err(|e| format!("bad redirect from {url}: {e}"))?;
            continue;
        }
        return read_body(url.as_str(), response, config.max_bytes).await;
    }
    Err(format!("more than {MAX_REDIRECTS} redirects from {start}"))
}

/// Checks scheme, credentials and every resolved address; returns the one to connect to.
async fn checked_address(url: &reqwest::Url, allow_private: bool) -> Result<SocketAddr, String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can be fetched, not '{}:'",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("URLs with credentials are refused".into());
    }
    let host = url.host_str().ok_or("the URL has no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .collect(),
    };
    let first = *addrs.first().ok_or(format!("{host} has no address"))?;
    if !allow_private && let Some(private) = addrs.iter().find(|a| !is_public(a.ip())) {
        return Err(format!(
            "refused: {host} resolves to the non-public address {}; set [tools.web_fetch] allow_private = true in config.toml to allow local and private networks",
            private.ip()
        ));
    }
    Ok(first)
}

/// Whether an address is on the public internet.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0xdb8)
        }
    }
}

fn client(host: &str, addr: SocketAddr, timeout_seconds: u64) -> Result<reqwest::Client, String> {
    lurkbot_term::install_crypto_provider();
    reqwest::Client::builder()
        .user_agent(concat!("LurkBot/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .resolve(host, addr)
        .timeout(Duration::from_secs(timeout_seconds.max(1)))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_and_private_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "1.1.1.1",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }
}
