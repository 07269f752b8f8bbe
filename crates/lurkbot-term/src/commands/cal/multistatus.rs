//! Reading a WebDAV `207 Multi-Status` answer (RFC 4918 §13) into plain resources: each
//! `<response>`'s href and the properties of its successful (`2xx`) propstats. Namespaces are
//! resolved, so any prefix a server picks works. Entities other than XML's five and character
//! references are never expanded, and no DTD is ever fetched.

use quick_xml::NsReader;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;

/// The WebDAV namespace.
pub(super) const DAV: &str = "DAV:";
/// The CalDAV namespace.
pub(super) const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";

/// Deepest element nesting accepted.
const MAX_DEPTH: usize = 64;

/// One `<response>`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Resource {
    /// The resource's href as sent (usually an absolute path).
    pub(super) href: String,
    /// Properties found with a 2xx status.
    pub(super) props: Vec<Prop>,
}

/// One property element.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Prop {
    /// Namespace URI.
    pub(super) ns: String,
    /// Local name.
    pub(super) name: String,
    /// Its text (for `getetag`, `displayname`, `calendar-data`, …).
    pub(super) text: String,
    /// `<href>`s inside it (for `current-user-principal`, `calendar-home-set`).
    pub(super) hrefs: Vec<String>,
    /// Child element names as (namespace, local name) (for `resourcetype`).
    pub(super) children: Vec<(String, String)>,
    /// `name` attributes of `<comp>` children (for `supported-calendar-component-set`).
    pub(super) comps: Vec<String>,
}

impl Resource {
    /// A property by namespace and local name.
    pub(super) fn prop(&self, ns: &str, name: &str) -> Option<&Prop> {
        self.props.iter().find(|p| p.ns == ns && p.name == name)
    }
}

/// Where the reader is inside a response.
#[derive(Default)]
struct Cursor {
    response: Option<Resource>,
    propstat: Vec<Prop>,
    status: String,
    prop: Option<Prop>,
    /// Depth of the current property element.
    prop_depth: usize,
}

/// Parses a multistatus body.
///
/// # Errors
/// A readable message when the body is not well-formed XML or nests too deeply.
pub(super) fn parse(body: &str) -> Result<Vec<Resource>, String> {
    let mut reader = NsReader::from_str(body);
    let mut stack: Vec<(String, String)> = Vec::new();
    let mut cur = Cursor::default();
    let mut out = Vec::new();
    loop {
        let (ns, event) = reader
            .read_resolved_event()
            .map_err(|e| format!("not well-formed XML: {e}"))?;
        let ns = match ns {
            ResolveResult::Bound(n) => n.into_inner().to_string(),
            _ => String::new(),
        };
        match event {
            Event::Start(e) => {
                let name = local(&e);
                open(&mut cur, &stack, &ns, &name, &e);
                stack.push((ns, name));
                if stack.len() > MAX_DEPTH {
                    return Err(format!("elements nest deeper than {MAX_DEPTH}"));
                }
            }
            Event::Empty(e) => {
                let name = local(&e);
                open(&mut cur, &stack, &ns, &name, &e);
                stack.push((ns, name));
                close(&mut cur, &mut stack, &mut out);
            }
            Event::End(_) => close(&mut cur, &mut stack, &mut out),
            Event::Text(t) => text(&mut cur, &stack, &t.xml10_content()),
            Event::CData(t) => text(&mut cur, &stack, &t.xml10_content()),
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => resolve_predefined_entity(&r.xml10_content())
                        .unwrap_or_default()
                        .to_string(),
                };
                text(&mut cur, &stack, &resolved);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

fn local(e: &BytesStart<'_>) -> String {
    e.local_name().into_inner().to_string()
}

fn is(entry: Option<&(String, String)>, ns: &str, name: &str) -> bool {
    entry.is_some_and(|(n, l)| n == ns && l == name)
}

fn open(cur: &mut Cursor, stack: &[(String, String)], ns: &str, name: &str, e: &BytesStart<'_>) {
    let parent = stack.last();
    if ns == DAV && name == "response" {
        cur.response = Some(Resource::default());
    } else if ns == DAV && name == "propstat" {
        cur.propstat.clear();
        cur.status.clear();
    } else if cur.prop.is_none() && is(parent, DAV, "prop") {
        cur.prop = Some(Prop {
            ns: ns.to_string(),
            name: name.to_string(),
            ..Prop::default()
        });
        cur.prop_depth = stack.len() + 1;
    } else if let Some(prop) = cur.prop.as_mut() {
        if ns == DAV && name == "href" {
            prop.hrefs.push(String::new());
        }
        if stack.len() == cur.prop_depth {
            prop.children.push((ns.to_string(), name.to_string()));
            if name == "comp"
                && let Ok(Some(attr)) = e.try_get_attribute("name")
                && let Ok(value) = attr.normalized_value(quick_xml::XmlVersion::Implicit1_0)
            {
                prop.comps.push(value.into_owned());
            }
        }
    }
}

fn close(cur: &mut Cursor, stack: &mut Vec<(String, String)>, out: &mut Vec<Resource>) {
    let depth = stack.len();
    let Some((ns, name)) = stack.pop() else {
        return;
    };
    if cur.prop.is_some() && depth == cur.prop_depth {
        if let Some(prop) = cur.prop.take() {
            cur.propstat.push(prop);
        }
    } else if ns == DAV && name == "propstat" {
        if is_success(&cur.status)
            && let Some(response) = cur.response.as_mut()
        {
            response.props.append(&mut cur.propstat);
        }
        cur.propstat.clear();
    } else if ns == DAV
        && name == "response"
        && let Some(response) = cur.response.take()
    {
        out.push(response);
    }
}

fn text(cur: &mut Cursor, stack: &[(String, String)], chunk: &str) {
    let top = stack.last();
    if let Some(prop) = cur.prop.as_mut() {
        if is(top, DAV, "href") && stack.len() > cur.prop_depth {
            if let Some(last) = prop.hrefs.last_mut() {
                last.push_str(chunk.trim());
            }
        } else if stack.len() == cur.prop_depth {
            prop.text.push_str(chunk);
        }
    } else if is(top, DAV, "status") && is(stack.iter().rev().nth(1), DAV, "propstat") {
        cur.status.push_str(chunk);
    } else if is(top, DAV, "href")
        && is(stack.iter().rev().nth(1), DAV, "response")
        && let Some(response) = cur.response.as_mut()
    {
        response.href.push_str(chunk.trim());
    }
}

/// Whether a `HTTP/1.1 200 OK` status line is a success.
fn is_success(status: &str) -> bool {
    status
        .split_whitespace()
        .nth(1)
        .is_some_and(|code| code.starts_with('2'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_radicale_style_answers() {
        let body = r#"<?xml version='1.0' encoding='utf-8'?>
<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><response><href>/alice/</href><propstat><prop><resourcetype><principal /><collection /></resourcetype></prop><status>HTTP/1.1 200 OK</status></propstat><propstat><prop><displayname /></prop><status>HTTP/1.1 404 Not Found</status></propstat></response><response><href>/alice/work/</href><propstat><prop><resourcetype><C:calendar /><collection /></resourcetype><displayname>Work &amp; play</displayname><C:supported-calendar-component-set><C:comp name="VTODO" /><C:comp name="VEVENT" /></C:supported-calendar-component-set><C:calendar-home-set><href>/alice/</href></C:calendar-home-set></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>"#;
        let resources = parse(body).unwrap();
        assert_eq!(resources.len(), 2);
        assert_eq!(resources[0].href, "/alice/");
        assert!(resources[0].prop(DAV, "displayname").is_none());
        let work = &resources[1];
        assert_eq!(work.prop(DAV, "displayname").unwrap().text, "Work & play");
        let kinds = &work.prop(DAV, "resourcetype").unwrap().children;
        assert!(kinds.contains(&(CALDAV.to_string(), "calendar".to_string())));
        assert_eq!(
            work.prop(CALDAV, "supported-calendar-component-set")
                .unwrap()
                .comps,
            vec!["VTODO", "VEVENT"]
        );
        assert_eq!(
            work.prop(CALDAV, "calendar-home-set").unwrap().hrefs,
            vec!["/alice/"]
        );
    }

    #[test]
    fn prefixes_cdata_and_character_references() {
        let body = "<d:multistatus xmlns:d='DAV:' xmlns:x='urn:ietf:params:xml:ns:caldav'><d:response><d:href>/c/e.ics</d:href><d:propstat><d:prop><d:getetag>\"e1\"</d:getetag><x:calendar-data><![CDATA[BEGIN:VCALENDAR\r\n]]>SUMMARY:a&#x26;b&lt;c</x:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>";
        let resources = parse(body).unwrap();
        assert_eq!(resources[0].prop(DAV, "getetag").unwrap().text, "\"e1\"");
        assert_eq!(
            resources[0].prop(CALDAV, "calendar-data").unwrap().text,
            "BEGIN:VCALENDAR\nSUMMARY:a&b<c"
        );
    }

    #[test]
    fn refuses_broken_and_deep_documents() {
        assert!(parse("<d:multistatus xmlns:d='DAV:'><d:response>").is_ok());
        assert!(parse("<a></b>").is_err());
        let deep = "<a>".repeat(100);
        assert!(parse(&deep).unwrap_err().contains("deeper"));
        let entity = "<!DOCTYPE m [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><d:multistatus xmlns:d='DAV:'><d:response><d:href>&x;</d:href></d:response></d:multistatus>";
        assert_eq!(parse(entity).unwrap()[0].href, "");
    }
}
