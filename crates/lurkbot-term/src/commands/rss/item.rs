//! The normalized item model (PRD-0024): the same fields whatever the feed format.

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
