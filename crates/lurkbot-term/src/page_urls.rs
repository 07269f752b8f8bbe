//! Which URLs a browser may load (ARCHITECTURE.md §4.6, §5.3): part of the network policy, so
//! the one place every URL decision is made also decides the browser's schemes. Only `http:`
//! and `https:` pages (and `about:blank`) are shown; a page may also load `data:`, `blob:` and
//! WebSocket subresources into itself. Everything else — `file:` (any file the process could
//! read), `javascript:` (a script typed as a URL), `data:` as a page, the browser's own
//! `chrome:`/`devtools:`/`chrome-extension:` pages, `view-source:`, `filesystem:`, `ftp:` — is
//! refused whoever asks: the model's argument, a link, a redirect or a script of the page.
//! Where an allowed URL's host may connect is the proxy's question ([`NetworkPolicy::check`]).

use reqwest::Url;

use crate::net_policy::{NetRefusal, NetworkPolicy};

/// What a browser is loading the URL as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageLoad {
    /// A page or a frame's document: the model's `navigate`/`open`, a link, a redirect,
    /// `window.open`, `location = …`.
    Document,
    /// Something a page loads into itself: an image, a script, `fetch`, a worker.
    Subresource,
}

impl NetworkPolicy {
    /// Whether a browser may load `raw` as `load`; the parsed URL when it may. The host's
    /// addresses are not looked at here: the policy proxy checks them on the connection.
    ///
    /// # Errors
    /// [`NetRefusal::PageScheme`] naming the scheme, [`NetRefusal::NotAUrl`],
    /// [`NetRefusal::Credentials`] or [`NetRefusal::NoHost`].
    pub fn check_page_url(&self, raw: &str, load: PageLoad) -> Result<Url, NetRefusal> {
        let url = Url::parse(raw.trim()).map_err(|_| NetRefusal::NotAUrl(shorten(raw)))?;
        let allowed = match url.scheme() {
            "http" | "https" => {
                if !url.username().is_empty() || url.password().is_some() {
                    return Err(NetRefusal::Credentials);
                }
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(NetRefusal::NoHost);
                }
                true
            }
            "about" => url.path() == "blank",
            "ws" | "wss" | "data" | "blob" => load == PageLoad::Subresource,
            _ => false,
        };
        if allowed {
            Ok(url)
        } else {
            Err(NetRefusal::PageScheme(url.scheme().to_string()))
        }
    }
}

/// At most 120 characters of a URL, its password masked, for a message.
fn shorten(raw: &str) -> String {
    let raw = crate::mask_url_passwords(raw.trim());
    match raw.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &raw[..at]),
        None => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(raw: &str, load: PageLoad) -> String {
        match NetworkPolicy::default().check_page_url(raw, load) {
            Err(e) => e.to_string(),
            Ok(url) => panic!("{raw} was allowed as {url}"),
        }
    }

    #[test]
    fn pages_are_http_https_or_blank() {
        let policy = NetworkPolicy::default();
        for ok in [
            "http://example.com/",
            "https://example.com/a?b#c",
            "about:blank",
            " https://127.0.0.1:9/ ",
        ] {
            assert!(
                policy.check_page_url(ok, PageLoad::Document).is_ok(),
                "{ok}"
            );
        }
        for (raw, scheme) in [
            ("file:///etc/hostname", "file"),
            ("FILE:///etc/passwd", "file"),
            ("javascript:document.body.innerHTML='x'", "javascript"),
            ("JaVaScRiPt:alert(1)", "javascript"),
            ("data:text/html,<script>x()</script>", "data"),
            ("chrome://version", "chrome"),
            ("chrome-extension://abc/page.html", "chrome-extension"),
            ("devtools://devtools/bundled/inspector.html", "devtools"),
            ("view-source:http://example.com/", "view-source"),
            ("blob:http://example.com/1b9d6bcd", "blob"),
            ("filesystem:http://example.com/temporary/x", "filesystem"),
            ("ftp://example.com/file", "ftp"),
            ("about:version", "about"),
            ("ws://example.com/socket", "ws"),
        ] {
            let message = refused(raw, PageLoad::Document);
            assert!(
                message.contains(&format!("not {scheme}: URLs")),
                "{message}"
            );
            assert!(message.contains("only http: and https:"), "{message}");
        }
        assert!(refused("example.com", PageLoad::Document).contains("not a URL"));
        let garbled = refused("http://me:hunter2@exa mple.com/", PageLoad::Document);
        assert!(
            garbled.contains("not a URL") && !garbled.contains("hunter2"),
            "{garbled}"
        );
        assert!(refused("http://u:p@example.com/", PageLoad::Document).contains("credentials"));
    }

    #[test]
    fn a_page_loads_data_blobs_and_sockets_into_itself_but_no_local_file() {
        let policy = NetworkPolicy::default();
        for ok in [
            "data:image/png;base64,AAAA",
            "blob:http://example.com/1b9d6bcd",
            "wss://example.com/socket",
            "https://example.com/app.js",
        ] {
            assert!(
                policy.check_page_url(ok, PageLoad::Subresource).is_ok(),
                "{ok}"
            );
        }
        for raw in [
            "file:///etc/hostname",
            "chrome://settings",
            "filesystem:http://example.com/x",
        ] {
            assert!(refused(raw, PageLoad::Subresource).contains("only http:"));
        }
    }
}
