//! HTML character references in text shown to a person: the XML five, common typographic
//! names, `&nbsp;` and numeric references. Shared by `web_fetch`'s HTML-to-text conversion and
//! the feed reader's HTML titles. Anything unknown is kept as written.

/// `text` with the character references it knows decoded.
pub fn decode_html_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest[..rest.len().min(12)].find(';');
        match end.and_then(|e| entity(&rest[1..e]).map(|c| (c, e))) {
            Some((c, e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "rsquo" => '’',
        "lsquo" => '‘',
        "rdquo" => '”',
        "ldquo" => '“',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::decode_html_entities;

    #[test]
    fn known_references_decode_and_the_rest_is_kept() {
        assert_eq!(
            decode_html_entities("Caf&#233; &amp; &#x2014;&mdash; &lt;3 &bogus; & &#0;"),
            "Café & —— <3 &bogus; & &#0;"
        );
        assert_eq!(decode_html_entities("plain"), "plain");
    }
}
