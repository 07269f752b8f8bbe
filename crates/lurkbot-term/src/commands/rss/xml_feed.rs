//! A streaming reader for RSS 0.9x/1.0/2.0 and Atom: one pass over `quick-xml` events that
//! fills one [`Draft`] at a time and keeps only the normalized items, so memory follows the
//! items kept, not a document model (a 2 MiB feed of 23,000 items peaked at 46 MiB through a
//! full feed model; ARCHITECTURE.md §9 says below 24 MiB).
//!
//! Safety: `quick-xml` never expands entities declared in a DTD and never fetches external
//! ones; character references and the five predefined entities are resolved, any other
//! reference stays as literal text (`&name;`). Nesting is capped at [`MAX_DEPTH`].
//!
//! Mapping (the first non-empty occurrence of a field wins):
//! - feed: `title`; `link` text or Atom `link href` (channel or Atom feed level).
//! - item (`item`, Atom `entry`): `title`; `link` text or `link href` with its `rel`; `guid` or
//!   Atom `id`; `author` (RSS text, `mail (Name)` gives the name), `dc:creator`, or Atom
//!   `author/name` then `author/email`; `pubDate`, `dc:date` or Atom `published`/`issued`,
//!   else Atom `updated`/`modified`; `description` or Atom `summary`; `content:encoded` or Atom
//!   `content` (not when it only points elsewhere with `src`).
//! - Markup: Atom `type="xhtml"` text keeps its markup (the wrapping `div` removed); elements
//!   found inside any other field are kept as markup too.
//! - Relative links are resolved against `xml:base` and then the feed's URL.

use quick_xml::NsReader;
use quick_xml::escape::{escape, resolve_predefined_entity};
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;

use super::item::{Draft, Item, fill, rss_author};
use super::parse::{MAX_DEPTH, ParsedFeed};

const ATOM: &str = "http://www.w3.org/2005/Atom";
const ATOM_03: &str = "http://purl.org/atom/ns#";
const RSS_10: &str = "http://purl.org/rss/1.0/";
const RSS_090: &str = "http://my.netscape.com/rdf/simple/0.9/";
const RDF: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
const DUBLIN_CORE: &str = "http://purl.org/dc/elements/1.1/";
const CONTENT: &str = "http://purl.org/rss/1.0/modules/content/";

/// The vocabularies told apart; RSS 1.0's and 0.90's namespaces read like unqualified RSS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Plain,
    Atom,
    Rdf,
    DublinCore,
    Content,
    Other,
}

fn ns_of(resolved: &ResolveResult<'_>) -> Ns {
    match resolved {
        ResolveResult::Unbound => Ns::Plain,
        ResolveResult::Bound(ns) => match ns.into_inner() {
            RSS_10 | RSS_090 => Ns::Plain,
            ATOM | ATOM_03 => Ns::Atom,
            RDF => Ns::Rdf,
            DUBLIN_CORE => Ns::DublinCore,
            CONTENT => Ns::Content,
            _ => Ns::Other,
        },
        ResolveResult::Unknown(_) => Ns::Other,
    }
}

/// What an open element is to the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `<rss>` or `<rdf:RDF>`: holds the channel (and, in RSS 0.9x/1.0, the items).
    Root,
    /// The RSS channel or the Atom feed element: feed-level fields and items.
    Channel,
    Item,
    /// Atom `author` inside an item: `name` and `email`.
    AtomAuthor,
    /// A field whose text is being captured.
    Field,
    /// Anything else, and everything inside a captured field.
    Other,
}

/// Where a captured text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    FeedTitle,
    FeedLink,
    Title,
    Link,
    Guid,
    RssAuthor,
    Creator,
    AuthorName,
    AuthorEmail,
    Published,
    Updated,
    Summary,
    Content,
}

/// The text of one field being read.
struct Capture {
    field: Field,
    /// Stack depth of the field's element.
    depth: usize,
    text: String,
    /// Atom `type="xhtml"`: text is markup, and the wrapping `div` is dropped.
    xhtml: bool,
    /// Atom `type="html"`: the text is HTML source; a title's entities are decoded.
    html: bool,
}

/// The reader's state between events.
#[derive(Default)]
struct State {
    format: Option<&'static str>,
    feed_title: Option<String>,
    feed_links: Vec<(Option<String>, String)>,
    items: Vec<Item>,
    stack: Vec<Role>,
    /// Effective `xml:base` values with the depth that set them.
    bases: Vec<(usize, String)>,
    item: Option<Draft>,
    capture: Option<Capture>,
    author_name: Option<String>,
    author_email: Option<String>,
}

/// Reads an RSS or Atom document fetched from `url`.
///
/// # Errors
/// What is wrong with the document, in words; the caller adds the hint.
pub(super) fn read(body: &str, url: &str) -> Result<ParsedFeed, String> {
    let mut reader = NsReader::from_str(body);
    let mut state = State::default();
    loop {
        let (ns, event) = match reader.read_resolved_event() {
            Ok((resolved, event)) => (ns_of(&resolved), event),
            Err(e) => {
                let at = reader.error_position();
                return Err(format!("not well-formed XML at byte {at}: {e}"));
            }
        };
        match event {
            Event::Start(e) => {
                state.open(ns, &e, url, false)?;
                if state.stack.len() > MAX_DEPTH {
                    return Err(format!("elements nest more than {MAX_DEPTH} deep"));
                }
            }
            Event::Empty(e) => {
                state.open(ns, &e, url, true)?;
                state.close();
            }
            Event::End(e) => {
                if let Some(capture) = state.capture.as_mut()
                    && state.stack.len() > capture.depth
                    && !capture.skips_wrapper(state.stack.len())
                {
                    capture.text.push_str("</");
                    capture.text.push_str(&e);
                    capture.text.push('>');
                }
                state.close();
            }
            Event::Text(t) => state.text(&t.xml10_content(), false),
            Event::CData(t) => state.text(&t.xml10_content(), true),
            Event::GeneralRef(r) => state.reference(&r.xml10_content(), r.resolve_char_ref()),
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if state.stack.last().is_some() {
        return Err("the document ends before its elements are closed (cut short?)".into());
    }
    let Some(format) = state.format else {
        return Err("the body holds no XML element".into());
    };
    Ok(ParsedFeed {
        format,
        title: state.feed_title,
        link: super::item::page_link(&state.feed_links),
        items: state.items,
    })
}

impl Capture {
    /// Whether the element at `depth` is the `div` wrapping Atom XHTML text.
    fn skips_wrapper(&self, depth: usize) -> bool {
        self.xhtml && depth == self.depth + 1
    }

    fn markup(&mut self, e: &BytesStart<'_>, empty: bool) {
        self.text.push('<');
        self.text.push_str(e);
        self.text.push_str(if empty { "/>" } else { ">" });
    }
}

impl State {
    /// Opens an element (`empty` when it closes itself).
    fn open(&mut self, ns: Ns, e: &BytesStart<'_>, url: &str, empty: bool) -> Result<(), String> {
        let depth = self.stack.len() + 1;
        if let Ok(Some(base)) = e.try_get_attribute("xml:base")
            && let Ok(value) = base.normalized_value(quick_xml::XmlVersion::Implicit1_0)
        {
            let resolved = resolve(self.base(url), &value);
            self.bases.push((depth, resolved));
        }
        if let Some(capture) = self.capture.as_mut() {
            if !capture.skips_wrapper(depth) {
                capture.markup(e, empty);
            }
            self.stack.push(Role::Other);
            return Ok(());
        }
        let local = e.local_name();
        let name = local.into_inner();
        let role = match self.stack.last() {
            None => self.root(ns, name, e)?,
            Some(Role::Root) => match name {
                "channel" => Role::Channel,
                "item" => self.start_item(),
                _ => Role::Other,
            },
            Some(Role::Channel) => self.in_channel(ns, name, e, url),
            Some(Role::Item) => self.in_item(ns, name, e, url),
            Some(Role::AtomAuthor) => match (ns, name) {
                (Ns::Atom | Ns::Plain, "name") => self.capture(Field::AuthorName, e),
                (Ns::Atom | Ns::Plain, "email") => self.capture(Field::AuthorEmail, e),
                _ => Role::Other,
            },
            Some(Role::Field | Role::Other) => Role::Other,
        };
        self.stack.push(role);
        Ok(())
    }

    fn root(&mut self, ns: Ns, name: &str, e: &BytesStart<'_>) -> Result<Role, String> {
        let (format, role) = match (ns, name) {
            (Ns::Plain, "rss") => {
                let version = attribute(e, "version").unwrap_or_default();
                let format = if version.trim().starts_with("0.9") {
                    "rss0.9x"
                } else {
                    "rss2.0"
                };
                (format, Role::Root)
            }
            (Ns::Rdf, "RDF") => ("rss1.0", Role::Root),
            (Ns::Atom | Ns::Plain, "feed") => ("atom", Role::Channel),
            _ => {
                return Err(format!(
                    "the document is <{name}>, not an RSS (<rss>, <rdf:RDF>) or Atom (<feed>) feed"
                ));
            }
        };
        self.format = Some(format);
        Ok(role)
    }

    fn in_channel(&mut self, ns: Ns, name: &str, e: &BytesStart<'_>, url: &str) -> Role {
        let atom = self.format == Some("atom");
        match (ns, name) {
            (Ns::Plain, "item") => self.start_item(),
            (Ns::Atom | Ns::Plain, "entry") if atom => self.start_item(),
            (Ns::Atom | Ns::Plain, "title") => self.capture(Field::FeedTitle, e),
            (Ns::Atom | Ns::Plain, "link") => match attribute(e, "href") {
                Some(href) => {
                    let link = (attribute(e, "rel"), resolve(self.base(url), &href));
                    self.feed_links.push(link);
                    Role::Other
                }
                None if ns == Ns::Plain => self.capture(Field::FeedLink, e),
                None => Role::Other,
            },
            _ => Role::Other,
        }
    }

    fn in_item(&mut self, ns: Ns, name: &str, e: &BytesStart<'_>, url: &str) -> Role {
        let atom_like = matches!(ns, Ns::Atom) || (ns == Ns::Plain && self.format == Some("atom"));
        let field = match (ns, name) {
            (Ns::Atom | Ns::Plain, "title") => Field::Title,
            (Ns::Atom | Ns::Plain, "link") => {
                if let Some(href) = attribute(e, "href") {
                    let link = (attribute(e, "rel"), resolve(self.base(url), &href));
                    if let Some(item) = self.item.as_mut() {
                        item.links.push(link);
                    }
                    return Role::Other;
                }
                Field::Link
            }
            (Ns::Plain, "guid") => Field::Guid,
            (Ns::Atom | Ns::Plain, "id") if atom_like => Field::Guid,
            (Ns::Atom | Ns::Plain, "author") if atom_like => {
                self.author_name = None;
                self.author_email = None;
                return Role::AtomAuthor;
            }
            (Ns::Plain, "author") => Field::RssAuthor,
            (Ns::DublinCore, "creator") => Field::Creator,
            (Ns::Plain, "pubDate") | (Ns::DublinCore, "date") => Field::Published,
            (Ns::Atom | Ns::Plain, "published" | "issued") if atom_like => Field::Published,
            (Ns::Atom | Ns::Plain, "updated" | "modified") if atom_like => Field::Updated,
            (Ns::Plain, "description") => Field::Summary,
            (Ns::Atom | Ns::Plain, "summary") if atom_like => Field::Summary,
            (Ns::Content, "encoded") => Field::Content,
            (Ns::Atom | Ns::Plain, "content") if atom_like => {
                if attribute(e, "src").is_some() {
                    return Role::Other;
                }
                Field::Content
            }
            _ => return Role::Other,
        };
        self.capture(field, e)
    }

    fn start_item(&mut self) -> Role {
        self.item = Some(Draft::default());
        Role::Item
    }

    fn capture(&mut self, field: Field, e: &BytesStart<'_>) -> Role {
        let kind = attribute(e, "type");
        let xhtml = kind.as_deref().is_some_and(|t| t.trim() == "xhtml");
        let html = kind.as_deref().is_some_and(|t| t.trim() == "html");
        self.capture = Some(Capture {
            field,
            depth: self.stack.len() + 1,
            text: String::new(),
            xhtml,
            html,
        });
        Role::Field
    }

    /// Closes the innermost element.
    fn close(&mut self) {
        let depth = self.stack.len();
        while self.bases.last().is_some_and(|(d, _)| *d >= depth) {
            self.bases.pop();
        }
        match self.stack.pop() {
            Some(Role::Field) => {
                if let Some(capture) = self.capture.take() {
                    self.store(capture);
                }
            }
            Some(Role::AtomAuthor) => {
                let author = self.author_name.take().or(self.author_email.take());
                if let (Some(item), Some(author)) = (self.item.as_mut(), author) {
                    fill(&mut item.author, &author);
                }
            }
            Some(Role::Item) => {
                if let Some(item) = self.item.take() {
                    self.items.push(item.finish());
                }
            }
            _ => {}
        }
    }

    fn store(&mut self, capture: Capture) {
        let is_title = matches!(capture.field, Field::Title | Field::FeedTitle);
        // A title is shown as text: an HTML title's entities (`Atom &amp; friends`) are decoded.
        let text = if capture.html && is_title {
            lurkbot_core::decode_html_entities(&capture.text)
        } else {
            capture.text
        };
        match capture.field {
            Field::FeedTitle => fill(&mut self.feed_title, &text),
            Field::FeedLink => self.feed_links.push((None, text.trim().to_string())),
            Field::AuthorName => fill(&mut self.author_name, &text),
            Field::AuthorEmail => fill(&mut self.author_email, &text),
            field => {
                let Some(item) = self.item.as_mut() else {
                    return;
                };
                match field {
                    Field::Title => fill(&mut item.title, &text),
                    Field::Link => item.links.push((None, text.trim().to_string())),
                    Field::Guid => fill(&mut item.guid, &text),
                    Field::RssAuthor => fill(&mut item.author, rss_author(&text)),
                    Field::Creator => fill(&mut item.author, &text),
                    Field::Published => fill(&mut item.published, &text),
                    Field::Updated => fill(&mut item.updated, &text),
                    Field::Summary => fill(&mut item.summary, &text),
                    Field::Content => fill(&mut item.content, &text),
                    Field::FeedTitle | Field::FeedLink | Field::AuthorName | Field::AuthorEmail => {
                    }
                }
            }
        }
    }

    /// Text or CDATA inside a field. XHTML text is markup, so CDATA there is escaped.
    fn text(&mut self, chunk: &str, cdata: bool) {
        if let Some(capture) = self.capture.as_mut() {
            if capture.xhtml && cdata {
                capture.text.push_str(&escape(chunk));
            } else {
                capture.text.push_str(chunk);
            }
        }
    }

    /// An entity or character reference inside a field: resolved in text, kept as written in
    /// XHTML markup; an undeclared name (a DTD's own entity) stays literal.
    fn reference(&mut self, name: &str, char_ref: Result<Option<char>, quick_xml::Error>) {
        let Some(capture) = self.capture.as_mut() else {
            return;
        };
        let resolved = match char_ref {
            Ok(Some(c)) => Some(c.to_string()),
            _ => resolve_predefined_entity(name).map(str::to_string),
        };
        match resolved {
            Some(text) if !capture.xhtml => capture.text.push_str(&text),
            _ => {
                capture.text.push('&');
                capture.text.push_str(name);
                capture.text.push(';');
            }
        }
    }

    /// The base for relative links here: the innermost `xml:base`, else the feed's URL.
    fn base<'a>(&'a self, url: &'a str) -> &'a str {
        self.bases.last().map_or(url, |(_, base)| base.as_str())
    }
}

/// An attribute's value, unescaped; `None` when absent or unreadable.
fn attribute(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let attr = e.try_get_attribute(name).ok()??;
    attr.normalized_value(quick_xml::XmlVersion::Implicit1_0)
        .ok()
        .map(|v| v.into_owned())
}

/// `href` made absolute against `base` when it is relative; absolute or unresolvable links are
/// kept as written.
fn resolve(base: &str, href: &str) -> String {
    let href = href.trim();
    match url::Url::parse(href) {
        Err(url::ParseError::RelativeUrlWithoutBase) => url::Url::parse(base)
            .and_then(|b| b.join(href))
            .map_or_else(|_| href.to_string(), String::from),
        _ => href.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(xml: &str) -> ParsedFeed {
        match read(xml, "https://feed.example/dir/feed.xml") {
            Ok(feed) => feed,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn xml_base_and_the_feed_url_resolve_relative_links() {
        let feed = parse(
            r#"<feed xmlns="http://www.w3.org/2005/Atom"><link href="/"/>
            <entry><link href="a"/></entry>
            <entry xml:base="https://other.example/x/"><link href="b"/></entry>
            <entry><link href="https://abs.example/c"/></entry></feed>"#,
        );
        assert_eq!(feed.link.as_deref(), Some("https://feed.example/"));
        let links: Vec<_> = feed.items.iter().map(|i| i.link.clone()).collect();
        assert_eq!(
            links,
            [
                Some("https://feed.example/dir/a".to_string()),
                Some("https://other.example/x/b".to_string()),
                Some("https://abs.example/c".to_string()),
            ]
        );
    }

    #[test]
    fn fields_of_nested_elements_do_not_leak_into_the_feed_or_item() {
        let feed = parse(
            r#"<rss version="2.0"><channel><title>Feed</title>
            <image><title>Logo</title><link>https://img.example/</link></image>
            <link>https://site.example/</link>
            <item><title>One</title><source url="https://s.example/">Src title</source>
            <enclosure url="https://e.example/a.mp3"/></item></channel></rss>"#,
        );
        assert_eq!(feed.title.as_deref(), Some("Feed"));
        assert_eq!(feed.link.as_deref(), Some("https://site.example/"));
        assert_eq!(feed.items.len(), 1);
        assert_eq!(feed.items[0].title.as_deref(), Some("One"));
        assert_eq!(feed.items[0].link, None);
    }

    #[test]
    fn markup_inside_fields_is_kept_and_xhtml_loses_its_wrapper() {
        let feed = parse(
            r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry>
            <content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">a &amp; <b>b</b><br/><![CDATA[<i>]]></div></content>
            <summary type="html">&lt;p&gt;x&lt;/p&gt; &#233; &unknown;</summary>
            </entry></feed>"#,
        );
        let item = &feed.items[0];
        assert_eq!(
            item.content.as_deref(),
            Some("a &amp; <b>b</b><br/>&lt;i&gt;")
        );
        assert_eq!(item.summary.as_deref(), Some("<p>x</p> é &unknown;"));
    }

    #[test]
    fn broken_documents_say_what_is_wrong() {
        for (xml, says) in [
            ("<rss><channel><item><title>x</title>", "cut short"),
            ("<rss><channel></item></channel></rss>", "not well-formed"),
            ("<html><body>hi</body></html>", "not an RSS"),
            ("   ", "no XML element"),
        ] {
            match read(xml, "https://x/") {
                Ok(_) => panic!("{xml} parsed"),
                Err(e) => assert!(e.contains(says), "{xml}: {e}"),
            }
        }
    }

    #[test]
    fn html_titles_are_shown_as_text() {
        let feed = parse(
            r#"<feed xmlns="http://www.w3.org/2005/Atom"><title type="html">Atom &amp;amp; friends</title>
            <entry><title type="html">Caf&amp;#233; &amp;lt;3 &amp;bogus; &amp;</title></entry>
            <entry><title>Plain &amp;amp; kept</title></entry></feed>"#,
        );
        assert_eq!(feed.title.as_deref(), Some("Atom & friends"));
        assert_eq!(feed.items[0].title.as_deref(), Some("Café <3 &bogus; &"));
        assert_eq!(feed.items[1].title.as_deref(), Some("Plain &amp; kept"));
    }

    #[test]
    fn atom_author_name_then_email_and_src_content_is_not_a_body() {
        let feed = parse(
            r#"<feed xmlns="http://www.w3.org/2005/Atom">
            <entry><author><email>ops@x</email></author><content src="https://x/full"/></entry>
            <entry><author><name>Ana</name><email>ana@x</email></author></entry></feed>"#,
        );
        assert_eq!(feed.items[0].author.as_deref(), Some("ops@x"));
        assert_eq!(feed.items[0].content, None);
        assert_eq!(feed.items[1].author.as_deref(), Some("Ana"));
    }
}
