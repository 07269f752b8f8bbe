//! The normalized item model (ARCHITECTURE.md §4.5): the same fields whatever the feed format.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One feed item. Every field may be `null`: feeds in the wild omit any of them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct Item {
    /// The title, as text.
    pub(super) title: Option<String>,
    /// The item's web page (`<link>`, Atom `rel="alternate"`, JSON Feed `url`).
    pub(super) link: Option<String>,
    /// The feed's own identifier (`<guid>`, Atom `<id>`, JSON Feed `id`); never invented.
    pub(super) guid: Option<String>,
    /// The first author's name (or e-mail address when no name is given).
    pub(super) author: Option<String>,
    /// Publication time (or, lacking one, the update time): RFC 3339 in UTC when the feed's
    /// date could be parsed, otherwise the feed's text verbatim.
    pub(super) published_at: Option<String>,
    /// `<description>`, Atom `<summary>` or JSON Feed `summary`, verbatim (may be HTML).
    pub(super) summary: Option<String>,
    /// The full content when the feed carries it (`content:encoded`, Atom `<content>`,
    /// JSON Feed `content_html`/`content_text`); only in `--out` files and the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) content: Option<String>,
}

impl Item {
    /// The short form used in `result.items`: title, time and link.
    pub(super) fn brief(&self) -> Value {
        json!({
            "title": self.title,
            "published_at": self.published_at,
            "link": self.link,
        })
    }
}

/// An item as a parser reads it, before normalisation. The XML and JSON readers fill one per
/// item; [`Draft::finish`] applies the rules every format shares.
#[derive(Debug, Default)]
pub(super) struct Draft {
    pub(super) title: Option<String>,
    /// Every link with its `rel` (none for RSS `<link>` text), already resolved.
    pub(super) links: Vec<(Option<String>, String)>,
    pub(super) guid: Option<String>,
    /// The display form of the first author (see [`rss_author`]).
    pub(super) author: Option<String>,
    /// Raw publication and update dates as the feed wrote them.
    pub(super) published: Option<String>,
    pub(super) updated: Option<String>,
    pub(super) summary: Option<String>,
    pub(super) content: Option<String>,
}

impl Draft {
    /// The normalized item: texts trimmed (empty means absent), the page link chosen, the date
    /// as RFC 3339 in UTC when it parses and verbatim when it does not.
    pub(super) fn finish(self) -> Item {
        Item {
            title: self.title,
            link: page_link(&self.links),
            guid: self.guid,
            author: self.author,
            published_at: self
                .published
                .or(self.updated)
                .map(|raw| super::dates::parse_date(&raw).map_or(raw, super::dates::to_rfc3339)),
            summary: self.summary,
            content: self.content,
        }
    }
}

/// Stores `value`, trimmed, in `slot` unless the slot is already filled or the value is blank:
/// the first non-empty occurrence of a field wins.
pub(super) fn fill(slot: &mut Option<String>, value: &str) {
    let value = value.trim();
    if slot.is_none() && !value.is_empty() {
        *slot = Some(value.to_string());
    }
}

/// The display name in an RSS `<author>`: `mail@example.com (Name)` gives `Name`; anything
/// else is kept as written.
pub(super) fn rss_author(text: &str) -> &str {
    let text = text.trim();
    text.strip_suffix(')')
        .and_then(|t| t.rfind('(').map(|open| t[open + 1..].trim()))
        .filter(|name| !name.is_empty())
        .unwrap_or(text)
}

/// The page link: `rel="alternate"` or no rel, else the first link that is not a comments or
/// self link.
pub(super) fn page_link(links: &[(Option<String>, String)]) -> Option<String> {
    let usable = |l: &&(Option<String>, String)| !l.1.trim().is_empty();
    links
        .iter()
        .filter(usable)
        .find(|(rel, _)| matches!(rel.as_deref(), None | Some("alternate")))
        .or_else(|| {
            links
                .iter()
                .filter(usable)
                .find(|(rel, _)| !matches!(rel.as_deref(), Some("self" | "replies" | "comments")))
        })
        .map(|(_, href)| href.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_author_takes_the_name_in_parentheses() {
        assert_eq!(
            rss_author("desk@example.com (Politics Desk)"),
            "Politics Desk"
        );
        assert_eq!(rss_author(" Jane "), "Jane");
        assert_eq!(rss_author("desk@example.com ()"), "desk@example.com ()");
        assert_eq!(rss_author("(Only Name)"), "Only Name");
    }

    #[test]
    fn the_first_filled_value_wins_and_blanks_never_fill() {
        let mut slot = None;
        fill(&mut slot, "  ");
        assert_eq!(slot, None);
        fill(&mut slot, " first ");
        fill(&mut slot, "second");
        assert_eq!(slot.as_deref(), Some("first"));
    }

    #[test]
    fn page_link_prefers_alternate_and_skips_self_and_comments() {
        let links = |l: &[(Option<&str>, &str)]| -> Vec<(Option<String>, String)> {
            l.iter()
                .map(|(r, h)| (r.map(str::to_string), (*h).to_string()))
                .collect()
        };
        let chosen = page_link(&links(&[
            (Some("self"), "https://x/feed"),
            (Some("alternate"), " https://x/post "),
        ]));
        assert_eq!(chosen.as_deref(), Some("https://x/post"));
        let chosen = page_link(&links(&[
            (Some("replies"), "https://x/c"),
            (Some("enclosure"), "https://x/a.mp3"),
        ]));
        assert_eq!(chosen.as_deref(), Some("https://x/a.mp3"));
        assert_eq!(page_link(&links(&[(Some("self"), "https://x/feed")])), None);
    }
}
