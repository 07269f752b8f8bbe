//! The readable part of an HTML page (ARCHITECTURE.md §5.2): `dom_smoothie`, a port of
//! Mozilla's Readability (the extractor behind Firefox's reader view) on `dom_query`'s
//! html5ever tree, finds the main content and drops scripts, styles, navigation, footers and
//! link farms; the article comes out as Markdown (links kept as Markdown links, made absolute)
//! or plain text. A page with no article (an index, an app shell) falls back to all of its
//! visible text, marked as such. A hostile page is bounded before any tree is built: past
//! [`MAX_ELEMENTS`] elements or [`MAX_DEPTH`] levels of nesting (an HTML tree builder checks the
//! open elements on every tag, so 200,000 nested `<div>`s cost it minutes), the page goes to
//! the linear plain-text reader instead.

use dom_smoothie::{Config as ReadabilityConfig, Readability, TextMode};

/// Most elements a page may have for article extraction (a hostile page of millions of nested
/// elements falls back to the bounded plain-text reader).
pub const MAX_ELEMENTS: usize = 30_000;

/// Deepest nesting parsed as a tree (real pages stay far below a hundred).
pub const MAX_DEPTH: usize = 512;

/// How the content is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractMode {
    /// Markdown: headings, lists, emphasis, links.
    Markdown,
    /// Plain text.
    Text,
}

impl ExtractMode {
    /// Parses `markdown` or `text`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "markdown" | "md" => Some(Self::Markdown),
            "text" | "plain" => Some(Self::Text),
            _ => None,
        }
    }
}

/// A page's readable content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// The title, when the page has one.
    pub title: Option<String>,
    /// The author line.
    pub byline: Option<String>,
    /// When it was published, as the page says.
    pub published: Option<String>,
    /// The content.
    pub body: String,
    /// No article was found: `body` is all of the page's visible text.
    pub whole_page: bool,
}

/// The article of `html`, fetched from `url` (relative links are made absolute against it).
pub fn extract(html: &str, url: &str, mode: ExtractMode) -> Article {
    let (elements, depth) = shape(html);
    if elements > MAX_ELEMENTS || depth > MAX_DEPTH {
        return whole_page(html);
    }
    let config = ReadabilityConfig {
        max_elements_to_parse: MAX_ELEMENTS,
        text_mode: match mode {
            ExtractMode::Markdown => TextMode::Markdown,
            ExtractMode::Text => TextMode::Formatted,
        },
        ..ReadabilityConfig::default()
    };
    let parsed = Readability::new(html, Some(url), Some(config)).and_then(|mut r| r.parse());
    match parsed {
        Ok(article) if !article.text_content.trim().is_empty() => Article {
            title: Some(article.title.trim().to_string()).filter(|t| !t.is_empty()),
            byline: article.byline.filter(|b| !b.trim().is_empty()),
            published: article.published_time,
            body: tidy(&article.text_content),
            whole_page: false,
        },
        _ => whole_page(html),
    }
}

fn whole_page(html: &str) -> Article {
    Article {
        title: None,
        byline: None,
        published: None,
        body: tidy(&lurkbot_core::html_to_text(html)),
        whole_page: true,
    }
}

/// Elements whose end tag is never written.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen",
];
/// Elements whose end tag may be left out (they do not nest in practice).
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "thead", "tbody", "tfoot", "colgroup", "rt",
    "rp", "optgroup",
];

/// How many start tags `html` has and how deep they nest, in one linear pass.
fn shape(html: &str) -> (usize, usize) {
    let bytes = html.as_bytes();
    let (mut elements, mut depth, mut deepest) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while let Some(offset) = memchr_lt(&bytes[i..]) {
        let at = i + offset + 1;
        i = at;
        let closing = bytes.get(at) == Some(&b'/');
        let start = if closing { at + 1 } else { at };
        let end = bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_alphanumeric())
            .map_or(bytes.len(), |n| start + n);
        if end == start {
            continue;
        }
        let name = html[start..end].to_ascii_lowercase();
        if closing {
            if !VOID.contains(&name.as_str()) && !OPTIONAL_END.contains(&name.as_str()) {
                depth = depth.saturating_sub(1);
            }
            continue;
        }
        elements += 1;
        let self_closed = bytes[end..]
            .iter()
            .position(|b| *b == b'>')
            .is_some_and(|gt| gt > 0 && bytes[end + gt - 1] == b'/');
        if !self_closed && !VOID.contains(&name.as_str()) && !OPTIONAL_END.contains(&name.as_str())
        {
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    (elements, deepest)
}

fn memchr_lt(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'<')
}

/// Runs of more than one blank line made one, trailing spaces dropped.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0usize;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_or_huge_pages_are_not_built_as_trees() {
        let deep = format!(
            "{}x{}",
            "<div>".repeat(MAX_DEPTH + 1),
            "</div>".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(shape(&deep), (MAX_DEPTH + 1, MAX_DEPTH + 1));
        let a = extract(&deep, "https://h.example/", ExtractMode::Markdown);
        assert!(a.whole_page && a.body.contains('x'));
        let flat = "<p>one<p>two<br><img src=x/><li>three</li>".repeat(3);
        assert_eq!(
            shape(&flat).1,
            0,
            "optional ends and void elements do not nest"
        );
        assert_eq!(shape("<div><span>a</span></div><div>b</div>"), (3, 2));
    }

    #[test]
    fn the_article_without_the_chrome() {
        let paragraph = "Rust's ownership rules let the compiler free memory without a collector, and this paragraph is long enough to count as content for a reader. ";
        let html = format!(
            r#"<html><head><title>Ownership | Docs</title><script>var tracking = 1;</script><style>p {{ color: red }}</style></head>
            <body><nav><a href="/">Home</a> <a href="/about">About</a> <a href="/blog">Blog</a></nav>
            <article><h1>Ownership</h1><p>{p}</p><p>{p} See <a href="/book/ch04">the chapter</a>.</p><p>{p}</p></article>
            <footer>Copyright 2026 · Privacy · Terms</footer></body></html>"#,
            p = paragraph
        );
        let a = extract(&html, "https://docs.example/guide/", ExtractMode::Markdown);
        assert!(!a.whole_page);
        assert!(a.body.contains("ownership rules"), "{}", a.body);
        assert!(
            a.body
                .contains("[the chapter](https://docs.example/book/ch04)"),
            "{}",
            a.body
        );
        for gone in ["tracking", "color: red", "About", "Privacy"] {
            assert!(!a.body.contains(gone), "{gone} kept: {}", a.body);
        }
        let t = extract(&html, "https://docs.example/guide/", ExtractMode::Text);
        assert!(
            t.body.contains("the chapter") && !t.body.contains("]("),
            "{}",
            t.body
        );
    }
}
