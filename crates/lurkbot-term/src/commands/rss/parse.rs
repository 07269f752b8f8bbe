//! Turning a downloaded body into the normalized model, with `feed-rs` doing the format work
//! (RSS 0.9x/1.0/2.0, Atom, JSON Feed).
//!
//! Safety: `feed-rs` reads XML with `quick-xml`, which never expands entities declared in a
//! DTD and never fetches external ones; only the five predefined entities and character
//! references are resolved, anything else stays as literal text. So billion-laughs and XXE
//! documents parse in bounded time and memory (or fail as `ParseError`). Nesting deeper than
//! [`MAX_DEPTH`] is refused before parsing.
//!
//! Encodings: the XML prolog's `encoding` is honoured (GB2312, ISO-8859-1, Shift_JIS, …); when
//! the prolog declares none but the HTTP `Content-Type` names a charset, the body is first
//! converted from that charset.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, TimeZone, Utc};
use feed_rs::model::{Entry, Feed, FeedType, Link, Text};

use super::dates::{parse_date, to_rfc3339};
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
    let unparsed = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&unparsed);
    let parser = feed_rs::parser::Builder::new()
        .base_uri(Some(url))
        // Items without an id keep `guid: null` instead of an invented hash.
        .id_generator(|_, _, _| String::new())
        // Unparseable dates are remembered and handed back as stand-in times (see `stand_in`),
        // so the verbatim text can be reported instead of dropping the date.
        .timestamp_parser(move |text| {
            parse_date(text).or_else(|| {
                let mut raw = sink.lock().unwrap_or_else(PoisonError::into_inner);
                raw.push(text.trim().to_string());
                stand_in(raw.len() - 1)
            })
        })
        .build();
    // A parser bug must not take the process down: a panic inside the feed parser becomes a
    // ParseError like any other unreadable feed.
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parser.parse(body)))
        .map_err(|_| {
            CommandError::new(
                ErrorCode::ParseError,
                "the feed could not be parsed (the parser gave up on it)",
            )
            .with_hint("this is not a normal feed; check the URL or tell the feed's owner")
        })?;
    let feed = parsed.map_err(|e| parse_error(body, &e))?;
    let raw_dates = std::mem::take(&mut *unparsed.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(normalize(feed, &raw_dates))
}

fn normalize(feed: Feed, raw_dates: &[String]) -> ParsedFeed {
    let format = match feed.feed_type {
        FeedType::Atom => "atom",
        FeedType::JSON => "json",
        FeedType::RSS0 => "rss0.9x",
        FeedType::RSS1 => "rss1.0",
        FeedType::RSS2 => "rss2.0",
    };
    let date = |t: Option<DateTime<Utc>>| {
        t.map(|t| match stand_in_index(t) {
            Some(i) => raw_dates.get(i).cloned().unwrap_or_default(),
            None => to_rfc3339(t),
        })
    };
    let items = feed
        .entries
        .into_iter()
        .map(|entry| normalize_entry(entry, &date))
        .collect();
    ParsedFeed {
        format,
        title: text(feed.title),
        link: page_link(&feed.links),
        items,
    }
}

fn normalize_entry(entry: Entry, date: &dyn Fn(Option<DateTime<Utc>>) -> Option<String>) -> Item {
    let author = entry.authors.iter().find_map(|p| {
        // "mail@example.com (Name)" leaves the name in parentheses.
        let name = p.name.as_deref().map_or("", |n| {
            let n = n.trim();
            n.strip_prefix('(')
                .and_then(|n| n.strip_suffix(')'))
                .map_or(n, str::trim)
        });
        if name.is_empty() {
            p.email.as_deref().map(str::trim).map(str::to_string)
        } else {
            Some(name.to_string())
        }
    });
    let content = entry.content.and_then(|c| {
        c.body
            .map(|b| b.trim().to_string())
            .filter(|b| !b.is_empty())
    });
    Item {
        title: text(entry.title),
        link: page_link(&entry.links),
        guid: Some(entry.id.trim().to_string()).filter(|id| !id.is_empty()),
        author,
        published_at: date(entry.published.or(entry.updated)),
        summary: text(entry.summary),
        content,
    }
}

fn text(t: Option<Text>) -> Option<String> {
    t.map(|t| t.content.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The page link: `rel="alternate"` or no rel, else the first link that is not a comments or
/// self link.
fn page_link(links: &[Link]) -> Option<String> {
    let usable = |l: &&Link| !l.href.trim().is_empty();
    links
        .iter()
        .filter(usable)
        .find(|l| matches!(l.rel.as_deref(), None | Some("alternate")))
        .or_else(|| {
            links
                .iter()
                .filter(usable)
                .find(|l| !matches!(l.rel.as_deref(), Some("self" | "replies" | "comments")))
        })
        .map(|l| l.href.trim().to_string())
}

/// Stand-in times live in year 1 (real dates before [`super::dates`]' minimum year are refused),
/// one second apart, so the n-th unparseable date maps back to its text.
fn stand_in(index: usize) -> Option<DateTime<Utc>> {
    let base = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).single()?;
    base.checked_add_signed(chrono::TimeDelta::seconds(i64::try_from(index).ok()?))
}

fn stand_in_index(t: DateTime<Utc>) -> Option<usize> {
    let base = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).single()?;
    if chrono::Datelike::year(&t) != 1 {
        return None;
    }
    usize::try_from((t - base).num_seconds()).ok()
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

fn parse_error(body: &[u8], e: &feed_rs::parser::ParseFeedError) -> CommandError {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let hint = if body.iter().all(u8::is_ascii_whitespace) {
        "the server sent an empty body; check the URL"
    } else if head.contains("<html") || head.contains("<!doctype html") {
        "the URL serves a web page, not a feed; look for the site's feed address (often /feed, /rss.xml or /atom.xml, or a <link rel=\"alternate\"> in the page)"
    } else {
        "the body is not a well-formed RSS, Atom or JSON feed; check the URL, or try again later if the feed was cut short"
    };
    CommandError::new(ErrorCode::ParseError, format!("cannot parse the feed: {e}")).with_hint(hint)
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
