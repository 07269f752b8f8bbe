//! What the model writes, as the web UI's chat shows it (`chat.render`): CommonMark with tables,
//! strikethrough and task lists rendered by `pulldown-cmark`, safe by construction — every piece
//! of the model's text reaches the page through the renderer's escaping, and nothing else does:
//!
//! - raw HTML in the reply (a block, an inline tag, a comment) is turned into text;
//! - a link keeps only an `http`, `https` or `mailto` target (anything else — `javascript:`,
//!   `data:`, a path into the gateway — leaves its text unlinked) and opens in a new tab with
//!   `noopener noreferrer`;
//! - an image becomes such a link showing its alt text (a picture from anywhere would tell a
//!   third party the page was read);
//! - fenced code is highlighted by [`crate::methods::highlight`] from escaped text.
//!
//! So the page receives only the renderer's own tags and the attributes above. Why not a second
//! pass through an HTML sanitizer (`ammonia`): it parses the output again with html5ever's tree
//! builder made for its own document type — 0.22 MiB of binary, past the 14 MiB budget, for a pass
//! that, given the rules above, finds nothing to remove (ARCHITECTURE.md §6, §9).

use pulldown_cmark::{CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};
use pulldown_cmark_escape::{escape_href, escape_html};
use serde_json::{Value, json};

use crate::methods::highlight;
use crate::protocol::MethodError;

/// The longest text rendered; a longer one is rendered up to here (the chat shows a reply of
/// this size as a scroll of its own anyway).
pub(crate) const MAX_CHARS: usize = 512 * 1024;

/// Link targets kept.
const SCHEMES: [&str; 3] = ["http://", "https://", "mailto:"];

/// The reply `text` as safe HTML.
pub(crate) fn render(text: &str) -> String {
    let text = match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    };
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut html = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, Shown::new(Parser::new_ext(text, options)));
    // Without the renderer's last line break, the message's text is the reply's text.
    html.truncate(html.trim_end().len());
    html
}

/// `chat.render {text}` → `{html}`.
pub(crate) fn method(params: &Value) -> Result<Value, MethodError> {
    let text = params
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("chat.render needs text, a string"))?;
    Ok(json!({"html": render(text)}))
}

/// The opening tag of a kept link, or `None` when its target is not allowed.
fn link_open(link_type: LinkType, dest: &str, title: &str) -> Option<String> {
    let href = match link_type {
        LinkType::Email => format!("mailto:{dest}"),
        _ => dest.to_string(),
    };
    let lower = href.to_ascii_lowercase();
    if !SCHEMES.iter().any(|s| lower.starts_with(s)) {
        return None;
    }
    let mut html = String::from("<a href=\"");
    escape_href(&mut html, &href).ok()?;
    html.push('"');
    if !title.is_empty() {
        html.push_str(" title=\"");
        escape_html(&mut html, title).ok()?;
        html.push('"');
    }
    html.push_str(" rel=\"noopener noreferrer nofollow\" target=\"_blank\">");
    Some(html)
}

/// The parser's events with the rules applied.
struct Shown<I> {
    events: I,
    /// For each link open now, whether it was kept (its end is written only then).
    links: Vec<bool>,
    /// A fenced block's language while its text is gathered.
    fence: Option<(String, String)>,
}

impl<I> Shown<I> {
    fn new(events: I) -> Self {
        Self {
            events,
            links: Vec::new(),
            fence: None,
        }
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Shown<I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            let event = match self.events.next() {
                Some(e) => e,
                // A reply still streaming can end inside a fence: show what came.
                None => return self.fence.take().map(|(lang, code)| block(&lang, &code)),
            };
            if let Some((_, code)) = self.fence.as_mut() {
                match event {
                    Event::Text(t) => code.push_str(&t),
                    Event::End(TagEnd::CodeBlock) => {
                        let (lang, code) = self.fence.take().unwrap_or_default();
                        return Some(block(&lang, &code));
                    }
                    _ => {}
                }
                continue;
            }
            return Some(match event {
                Event::Start(Tag::CodeBlock(kind)) => {
                    let lang = match kind {
                        CodeBlockKind::Fenced(info) => {
                            info.split_whitespace().next().unwrap_or("").to_string()
                        }
                        CodeBlockKind::Indented => String::new(),
                    };
                    self.fence = Some((lang, String::new()));
                    continue;
                }
                Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
                Event::Start(
                    Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        ..
                    }
                    | Tag::Image {
                        link_type,
                        dest_url,
                        title,
                        ..
                    },
                ) => {
                    let open = link_open(link_type, &dest_url, &title);
                    self.links.push(open.is_some());
                    match open {
                        Some(tag) => Event::InlineHtml(tag.into()),
                        None => continue,
                    }
                }
                Event::End(TagEnd::Link | TagEnd::Image) => {
                    if self.links.pop() == Some(true) {
                        Event::InlineHtml("</a>".into())
                    } else {
                        continue;
                    }
                }
                // No form control in a message: a task's box is a character.
                Event::TaskListMarker(done) => Event::Text(if done { "☑ " } else { "☐ " }.into()),
                other => other,
            });
        }
    }
}

/// A code block: `<pre class="code">` with the highlighter's spans (escaped text inside).
fn block<'a>(lang: &str, code: &str) -> Event<'a> {
    let mut html = String::from("<pre class=\"code\"><code>");
    highlight::push(&mut html, lang, code);
    html.push_str("</code></pre>\n");
    Event::Html(CowStr::from(html))
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn tables_lists_and_fenced_code_become_elements() {
        let html = render(
            "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n```rust\nfn main() { let s = \"x\"; } // done\n```\n\n**bold** and `code`",
        );
        for part in [
            "<h1>Title</h1>",
            "<table>",
            "<td>1</td>",
            "<li>one</li>",
            "<strong>bold</strong>",
            "<code>code</code>",
            "<pre class=\"code\"><code>",
            "<span class=\"hl-k\">fn</span>",
            "<span class=\"hl-s\">&quot;x&quot;</span>",
            "<span class=\"hl-c\">// done</span>",
        ] {
            assert!(html.contains(part), "{part} missing from {html}");
        }
    }

    #[test]
    fn html_the_model_wrote_is_shown_as_text_never_as_markup() {
        let html = render(
            "<img src=x onerror=alert(1)>\n\n<script>alert(2)</script>\n\nhi <b onclick=\"x()\">b</b> <!-- note -->\n\n[click](javascript:alert(3)) ![pic](http://tracker.example/p.png)",
        );
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<b "), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("<!--"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(2)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.contains("&lt;!-- note --&gt;"), "{html}");
        assert!(
            html.contains("<a href=\"http://tracker.example/p.png\""),
            "an image is a link: {html}"
        );
        assert!(
            html.contains("rel=\"noopener noreferrer nofollow\""),
            "{html}"
        );
    }

    #[test]
    fn only_web_and_mail_links_survive() {
        let html = render(
            "[a](JaVaScRiPt:alert(1)) [b](data:text/html,x) [c](/v1/models) [d](https://ok.example/?q=\"x\" \"t\\\"<\") <me@mail.example> <https://auto.example>",
        );
        for gone in ["javascript", "JaVaScRiPt", "data:", "/v1/models", "<t"] {
            assert!(!html.contains(gone), "{gone} in {html}");
        }
        assert_eq!(html.matches("<a ").count(), 3, "{html}");
        assert!(html.contains("href=\"mailto:me@mail.example\""), "{html}");
        assert!(html.contains("href=\"https://auto.example\""), "{html}");
        assert!(html.contains("title=\"t&quot;&lt;\""), "{html}");
        assert!(
            html.starts_with("<p>a b c <a "),
            "the text of a dropped link stays: {html}"
        );
    }

    #[test]
    fn a_reply_cut_inside_a_fence_shows_its_code() {
        let html = render("Here:\n\n```python\nx = 1  # one\n");
        assert!(html.contains("<span class=\"hl-n\">1</span>"), "{html}");
        assert!(html.contains("<span class=\"hl-c\"># one</span>"), "{html}");
    }
}
