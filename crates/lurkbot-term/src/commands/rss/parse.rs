//! Turning a downloaded body into the normalized model: RSS 0.9x/1.0/2.0 and Atom through the
//! streaming reader in [`super::xml_feed`], JSON Feed through [`super::json_feed`].
//!
//! Safety: no entity declared in a DTD is ever expanded and no external one is fetched (see
//! `xml_feed`), so billion-laughs and XXE documents parse in bounded time and memory. Nesting
//! deeper than [`MAX_DEPTH`] is refused before parsing; a second XML declaration too.
//!
//! Encodings: the XML prolog's `encoding` is honoured (GB2312, ISO-8859-1, Shift_JIS, …); when
//! the prolog declares none but the HTTP `Content-Type` names a charset, the body is first
//! converted from that charset (see `charset`).

use super::item::Item;
use crate::{CommandError, ErrorCode};

/// Deepest element nesting accepted; real feeds stay under 20.
pub(super) const MAX_DEPTH: usize = 256;

/// A parsed feed.
#[derive(Debug, Clone)]
pub(super) struct ParsedFeed {
    /// `rss0.9x`, `rss1.0`, `rss2.0`, `atom` or `json`.
    pub(super) format: &'static str,
    /// The feed's title.
    pub(super) title: Option<String>,
    /// The feed's web page.
    pub(super) link: Option<String>,
    /// Every item, in feed order.
    pub(super) items: Vec<Item>,
}

/// Parses `body`, fetched from `url` with the given `Content-Type`.
///
/// # Errors
/// `ParseError` saying what the body looked like and what to do.
pub(super) fn parse_feed(
    body: &[u8],
    content_type: Option<&str>,
    url: &str,
) -> Result<ParsedFeed, CommandError> {
    let converted = super::charset::utf8_xml(body, content_type);
    let body = converted.as_ref();
    check_depth(body)?;
    let first = body
        .iter()
        .find(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF));
    // A bug in the XML reader underneath must not take the process down: a panic becomes a
    // ParseError like any other unreadable feed.
    let parsed = std::panic::catch_unwind(|| {
        if first == Some(&b'{') {
            super::json_feed::read(body)
        } else {
            super::xml_feed::read(&String::from_utf8_lossy(body), url)
        }
    })
    .unwrap_or_else(|_| Err("the XML reader gave up on it".to_string()));
    parsed.map_err(|reason| parse_error(body, &reason))
}

/// Refuses XML nested deeper than [`MAX_DEPTH`] (a cheap scan of tag openings and closings;
/// comments, CDATA and processing instructions are skipped). JSON bodies are not scanned: the
/// HTML inside their strings is not structure.
fn check_depth(body: &[u8]) -> Result<(), CommandError> {
    let first = body
        .iter()
        .find(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF));
    if first == Some(&b'{') {
        return Ok(());
    }
    let mut depth = 0usize;
    let mut i = 0;
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF));
    while let Some(offset) = body[i..].iter().position(|&b| b == b'<') {
        let at = i + offset;
        i += offset + 1;
        let rest = &body[i..];
        // An XML declaration may only open the document; a second one (which also switches
        // the encoding midway) is not XML, and the parser below cannot be trusted with it.
        let declaration = rest.len() > 4
            && rest[1..4].eq_ignore_ascii_case(b"xml")
            && rest[0] == b'?'
            && rest[4].is_ascii_whitespace();
        if declaration && Some(at) != start {
            return Err(CommandError::new(
                ErrorCode::ParseError,
                format!("the feed has an XML declaration in the middle (at byte {at}); it is not well-formed XML"),
            )
            .with_hint("this is not a normal feed; check the URL or tell the feed's owner"));
        }
        let skip_to = |end: &[u8]| {
            rest.windows(end.len())
                .position(|w| w == end)
                .map_or(body.len(), |p| i + p + end.len())
        };
        if rest.starts_with(b"!--") {
            i = skip_to(b"-->");
        } else if rest.starts_with(b"![CDATA[") {
            i = skip_to(b"]]>");
        } else if rest.starts_with(b"?") || rest.starts_with(b"!") {
            continue;
        } else if rest.starts_with(b"/") {
            depth = depth.saturating_sub(1);
        } else {
            let tag_end = rest.iter().position(|&b| b == b'>').unwrap_or(rest.len());
            if tag_end == 0 || rest[tag_end - 1] != b'/' {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(CommandError::new(
                        ErrorCode::ParseError,
                        format!("the feed nests elements more than {MAX_DEPTH} deep"),
                    )
                    .with_hint("this is not a normal feed; check the URL"));
                }
            }
        }
    }
    Ok(())
}

fn parse_error(body: &[u8], reason: &str) -> CommandError {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let hint = if body.iter().all(u8::is_ascii_whitespace) {
        "the server sent an empty body; check the URL"
    } else if head.contains("<html") || head.contains("<!doctype html") {
        "the URL serves a web page, not a feed; look for the site's feed address (often /feed, /rss.xml or /atom.xml, or a <link rel=\"alternate\"> in the page)"
    } else {
        "the body is not a well-formed RSS, Atom or JSON feed; check the URL, or try again later if the feed was cut short"
    };
    CommandError::new(
        ErrorCode::ParseError,
        format!("cannot parse the feed: {reason}"),
    )
    .with_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_scan_counts_only_open_elements() {
        assert!(
            check_depth(
                b"<?xml version='1.0'?><!-- <a><a> --><rss><br/><c><![CDATA[<x><y>]]></c></rss>"
            )
            .is_ok()
        );
        let deep = "<a>".repeat(MAX_DEPTH + 1);
        assert_eq!(
            check_depth(deep.as_bytes()).unwrap_err().code,
            ErrorCode::ParseError
        );
        let balanced = "<a></a>".repeat(MAX_DEPTH * 4);
        assert!(check_depth(balanced.as_bytes()).is_ok());
        let json = format!(
            "{{\"items\":[{{\"content_html\":\"{}\"}}]}}",
            "<br>".repeat(MAX_DEPTH * 2)
        );
        assert!(check_depth(json.as_bytes()).is_ok());
    }

    #[test]
    fn unparseable_dates_are_kept_verbatim() {
        let xml = br#"<rss version="2.0"><channel><title>t</title>
            <item><title>a</title><pubDate>yesterday-ish</pubDate></item>
            <item><title>b</title><pubDate>Fri, 20 Nov 2026 09:30:00 GMT</pubDate></item>
            <item><title>c</title><pubDate>sometime</pubDate></item>
            </channel></rss>"#;
        let feed = parse_feed(xml, None, "http://x/").unwrap();
        let dates: Vec<_> = feed.items.iter().map(|i| i.published_at.clone()).collect();
        assert_eq!(
            dates,
            [
                Some("yesterday-ish".to_string()),
                Some("2026-11-20T09:30:00Z".to_string()),
                Some("sometime".to_string())
            ]
        );
        assert_eq!(feed.items[0].guid, None);
    }
}
