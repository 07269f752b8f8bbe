//! What the model writes, as the web UI's chat shows it (`chat.render`): CommonMark with tables,
//! strikethrough and task lists rendered by `pulldown-cmark`, then cleaned by `ammonia`, so no
//! HTML the model wrote is ever executed.
//!
//! Three rules before the sanitizer, so that it is the second wall rather than the only one:
//! raw HTML in the reply (a block, an inline tag, a comment) is shown as text; an image becomes a
//! link showing its alt text (a picture from anywhere would tell a third party the page was
//! read); fenced code is highlighted by [`crate::highlight`] from escaped text. The sanitizer
//! then keeps only its default tags, links of `http`, `https` and `mailto` (opened in a new tab,
//! `noopener noreferrer`), and the highlighter's classes.

use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

use serde_json::{Value, json};

use crate::highlight;
use crate::protocol::MethodError;

/// The longest text rendered; a longer one is rendered up to here (the chat shows a reply of
/// this size as a scroll of its own anyway).
pub(crate) const MAX_CHARS: usize = 512 * 1024;

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
    // Without the parser's last line break, the message's text is the reply's text.
    sanitizer().clean(html.trim_end()).to_string()
}

/// `chat.render {text}` → `{html}`.
pub(crate) fn method(params: &Value) -> Result<Value, MethodError> {
    let text = params
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("chat.render needs text, a string"))?;
    Ok(json!({"html": render(text)}))
}

/// The sanitizer: ammonia's defaults (no script, no style, no event attribute, no unknown
/// scheme), links into a new tab, and the highlighter's classes on `span`.
fn sanitizer() -> ammonia::Builder<'static> {
    let mut b = ammonia::Builder::default();
    b.url_schemes(["http", "https", "mailto"].into())
        .link_rel(Some("noopener noreferrer nofollow"))
        .set_tag_attribute_value("a", "target", "_blank")
        .add_allowed_classes("span", highlight::CLASSES)
        .add_allowed_classes("pre", ["code"])
        .rm_tags(["img"]);
    b
}

/// The parser's events with the three rules applied.
struct Shown<'a, I> {
    events: I,
    /// A fenced block's language while its text is gathered.
    fence: Option<(String, String)>,
    /// The events waiting after a highlighted block.
    pending: Option<Event<'a>>,
}

impl<'a, I: Iterator<Item = Event<'a>>> Shown<'a, I> {
    fn new(events: I) -> Self {
        Self {
            events,
            fence: None,
            pending: None,
        }
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Shown<'a, I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if let Some(e) = self.pending.take() {
            return Some(e);
        }
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
                Event::Start(Tag::Image {
                    link_type,
                    dest_url,
                    title,
                    id,
                }) => Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }),
                Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
                // The sanitizer keeps no form control: a task's box is a character.
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
            "<span class=\"hl-s\">\"x\"</span>",
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
    fn a_reply_cut_inside_a_fence_shows_its_code() {
        let html = render("Here:\n\n```python\nx = 1  # one\n");
        assert!(html.contains("<span class=\"hl-n\">1</span>"), "{html}");
        assert!(html.contains("<span class=\"hl-c\"># one</span>"), "{html}");
    }
}
