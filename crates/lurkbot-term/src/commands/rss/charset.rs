//! Every XML feed reaches the parser as UTF-8 with one plain declaration at its start.
//!
//! The encoding is taken, in order, from a byte-order mark, the XML declaration's `encoding`,
//! the HTTP `Content-Type` charset, else UTF-8 (a declared UTF-16 on a body that starts with
//! ASCII `<?xml` is read as UTF-8, as browsers do). The body is decoded here (invalid bytes
//! become U+FFFD) and the original declaration is replaced by `<?xml version="1.0"
//! encoding="UTF-8"?>`. The XML reader underneath then never switches encodings midway — a
//! hostile declaration (overlong, with NULs, or a second one) made it panic (found by the
//! `feed_parser` fuzz target).

use std::borrow::Cow;

use encoding_rs::Encoding;

/// The declaration every XML body gets.
const DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8"?>"#;

/// `body` as UTF-8 XML with a plain declaration; JSON and non-XML bodies are returned as they
/// are.
pub(super) fn utf8_xml<'a>(body: &'a [u8], content_type: Option<&str>) -> Cow<'a, [u8]> {
    let (bom_encoding, bom_len) = match Encoding::for_bom(body) {
        Some((encoding, len)) => (Some(encoding), len),
        None => (None, 0),
    };
    let after_bom = &body[bom_len..];
    let start = after_bom
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(after_bom.len());
    // UTF-16 with a BOM is decoded first; anything else must start with '<' to be XML.
    if bom_encoding.is_none_or(|e| e == encoding_rs::UTF_8) && after_bom.get(start) != Some(&b'<') {
        return Cow::Borrowed(body);
    }
    let rest = &after_bom[start..];
    let (declared, declaration_len) = declaration(rest);
    let encoding = bom_encoding
        .or(declared.filter(|e| !is_utf16(e)))
        .or_else(|| header_charset(content_type))
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _) = encoding.decode_without_bom_handling(&rest[declaration_len..]);
    let mut out = String::with_capacity(DECLARATION.len() + 1 + text.len());
    out.push_str(DECLARATION);
    out.push('\n');
    out.push_str(&text);
    Cow::Owned(out.into_bytes())
}

/// The encoding a leading `<?xml … ?>` names, and the declaration's length in bytes (0 when the
/// body has none).
fn declaration(rest: &[u8]) -> (Option<&'static Encoding>, usize) {
    let is_declaration =
        rest.len() > 5 && rest[..5].eq_ignore_ascii_case(b"<?xml") && rest[5].is_ascii_whitespace();
    if !is_declaration {
        return (None, 0);
    }
    let Some(end) = rest.windows(2).position(|w| w == b"?>") else {
        return (None, 0);
    };
    let inside = &rest[..end];
    let encoding = inside
        .windows(8)
        .position(|w| w.eq_ignore_ascii_case(b"encoding"))
        .and_then(|at| {
            let value = &inside[at + 8..];
            let open = value.iter().position(|b| *b == b'"' || *b == b'\'')?;
            let quote = value[open];
            let label = &value[open + 1..];
            let close = label.iter().position(|b| *b == quote)?;
            Encoding::for_label(&label[..close])
        });
    (encoding, end + 2)
}

fn is_utf16(encoding: &&'static Encoding) -> bool {
    *encoding == encoding_rs::UTF_16LE || *encoding == encoding_rs::UTF_16BE
}

/// The `charset` of a `Content-Type` header.
fn header_charset(content_type: Option<&str>) -> Option<&'static Encoding> {
    let charset = content_type?
        .split(';')
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"'))?;
    Encoding::for_label(charset.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(body: &[u8], content_type: Option<&str>) -> String {
        String::from_utf8(utf8_xml(body, content_type).into_owned()).unwrap()
    }

    #[test]
    fn the_declaration_wins_over_the_header_and_the_header_over_nothing() {
        let latin1 = b"<rss version=\"2.0\"><channel><title>caf\xe9</title></channel></rss>";
        assert!(text(latin1, Some("text/xml; charset=ISO-8859-1")).contains("café"));
        assert!(text(latin1, Some("text/xml")).contains("caf\u{FFFD}"));
        let declared = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss>caf\xe9</rss>";
        let out = text(declared, Some("text/xml; charset=windows-1251"));
        assert!(
            out.starts_with(DECLARATION) && out.contains("café"),
            "{out}"
        );
        assert_eq!(out.matches("<?xml").count(), 1);
    }

    #[test]
    fn hostile_declarations_are_replaced() {
        let mut nul = b"<?xml ver".to_vec();
        nul.extend([0u8; 80]);
        nul.extend(b"sion=\"1.0\" encoding=\"ISO-8859-1\"?>\n<rss/>");
        let out = text(&nul, None);
        assert!(
            out.starts_with(DECLARATION) && out.ends_with("<rss/>"),
            "{out:?}"
        );
        let utf16 = text(
            b"<?xml version=\"1.0\" encoding=\"UTF-16\"?><rss>ok</rss>",
            None,
        );
        assert!(utf16.ends_with("<rss>ok</rss>"), "{utf16}");
        let bom = [&[0xEF, 0xBB, 0xBF][..], b"<rss>\xc3\xa9</rss>"].concat();
        assert!(text(&bom, None).ends_with("<rss>é</rss>"));
    }

    #[test]
    fn json_and_other_bodies_pass_through() {
        let json = b"{\"version\":\"https://jsonfeed.org/version/1.1\"}";
        assert!(matches!(utf8_xml(json, None), Cow::Borrowed(_)));
        assert!(matches!(utf8_xml(b"hello", None), Cow::Borrowed(_)));
    }
}
