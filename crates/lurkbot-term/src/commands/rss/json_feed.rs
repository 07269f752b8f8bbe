//! JSON Feed 1.0 and 1.1 (<https://jsonfeed.org/version/1.1>): only the fields the item model
//! keeps are read; anything else in the document is skipped without being stored.
//!
//! Mapping: `title`, `home_page_url`; per item `id` (a number is accepted as its text), `url`
//! (else `external_url`), `title`, the first of `authors` (1.1) or `author` (1.0) by name,
//! `date_published` else `date_modified`, `summary`, `content_html` else `content_text`.

use serde::Deserialize;
use serde_json::Value;

use super::item::{Draft, fill};
use super::parse::ParsedFeed;

#[derive(Deserialize)]
struct JsonFeed {
    version: Option<String>,
    title: Option<String>,
    home_page_url: Option<String>,
    #[serde(default)]
    items: Vec<JsonItem>,
}

#[derive(Deserialize)]
struct JsonItem {
    id: Option<Value>,
    url: Option<String>,
    external_url: Option<String>,
    title: Option<String>,
    summary: Option<String>,
    content_html: Option<String>,
    content_text: Option<String>,
    date_published: Option<String>,
    date_modified: Option<String>,
    author: Option<JsonAuthor>,
    #[serde(default)]
    authors: Vec<JsonAuthor>,
}

#[derive(Deserialize)]
struct JsonAuthor {
    name: Option<String>,
}

/// Reads a JSON Feed document.
///
/// # Errors
/// What is wrong with the document, in words; the caller adds the hint.
pub(super) fn read(body: &[u8]) -> Result<ParsedFeed, String> {
    let feed: JsonFeed =
        serde_json::from_slice(body).map_err(|e| format!("not a readable JSON Feed: {e}"))?;
    if !feed
        .version
        .as_deref()
        .is_some_and(|v| v.contains("jsonfeed.org/version/"))
    {
        return Err(
            "a JSON document without a JSON Feed \"version\" (https://jsonfeed.org/version/1.1)"
                .into(),
        );
    }
    let mut title = None;
    fill(&mut title, feed.title.as_deref().unwrap_or_default());
    let mut link = None;
    fill(&mut link, feed.home_page_url.as_deref().unwrap_or_default());
    let items = feed.items.into_iter().map(item).collect();
    Ok(ParsedFeed {
        format: "json",
        title,
        link,
        items,
    })
}

fn item(json: JsonItem) -> super::item::Item {
    let mut draft = Draft::default();
    let text = |v: &Option<String>| v.as_deref().unwrap_or_default().to_string();
    fill(&mut draft.title, &text(&json.title));
    for url in [&json.url, &json.external_url].into_iter().flatten() {
        draft.links.push((None, url.trim().to_string()));
    }
    let id = match json.id {
        Some(Value::String(s)) => s,
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    fill(&mut draft.guid, &id);
    for author in json.authors.iter().chain(json.author.as_ref()) {
        fill(
            &mut draft.author,
            author.name.as_deref().unwrap_or_default(),
        );
    }
    fill(&mut draft.published, &text(&json.date_published));
    fill(&mut draft.updated, &text(&json.date_modified));
    fill(&mut draft.summary, &text(&json.summary));
    fill(&mut draft.content, &text(&json.content_html));
    fill(&mut draft.content, &text(&json.content_text));
    draft.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_1_0_authors_numeric_ids_and_external_urls() {
        let feed = read(
            br#"{"version":"https://jsonfeed.org/version/1","title":" T ","items":[
            {"id":7,"external_url":"https://x/e","author":{"name":"Old"},"date_modified":"2026-11-01T00:00:00Z"}]}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(feed.title.as_deref(), Some("T"));
        let item = &feed.items[0];
        assert_eq!(item.guid.as_deref(), Some("7"));
        assert_eq!(item.link.as_deref(), Some("https://x/e"));
        assert_eq!(item.author.as_deref(), Some("Old"));
        assert_eq!(item.published_at.as_deref(), Some("2026-11-01T00:00:00Z"));
    }

    #[test]
    fn json_that_is_not_a_json_feed_is_refused() {
        for body in [&br#"{"items":[]}"#[..], b"[1,2]", b"{\"version\":5}"] {
            assert!(read(body).is_err(), "{}", String::from_utf8_lossy(body));
        }
    }
}
