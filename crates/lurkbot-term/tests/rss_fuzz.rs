//! Mutated and random feed documents never panic the parser: every answer is a list of items or
//! a `ParseError`.

use proptest::prelude::*;

use lurkbot_term::parse_items;

fn seeds() -> Vec<Vec<u8>> {
    [
        "rss2_content_encoded.xml",
        "atom_xhtml.xml",
        "rss1_rdf.xml",
        "feed.json",
        "gb2312.xml",
        "billion_laughs.xml",
    ]
    .iter()
    .map(|f| std::fs::read(format!("{}/tests/feeds/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap())
    .collect()
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    for content_type in [None, Some("text/xml; charset=windows-1252")] {
        let outcome = std::panic::catch_unwind(|| parse_items(bytes, content_type, "http://x/"));
        match outcome {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => prop_assert_eq!(e.code, lurkbot_term::ErrorCode::ParseError),
            Err(_) => prop_assert!(
                false,
                "the parser panicked on {:?}",
                String::from_utf8_lossy(bytes)
            ),
        }
    }
    Ok(())
}

/// Characters that matter to XML and JSON, spliced in by the mutations.
const SPECIAL: &[u8] = b"<>&;/\"'=?!{}[]:,\\ \x00\xff";

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_feeds(
        seed in 0usize..6,
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0usize..SPECIAL.len(), 0u8..3), 1..12),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = seeds()[seed].clone();
        for (at, special, op) in edits {
            let i = at.index(bytes.len().max(1)).min(bytes.len());
            match op {
                0 if i < bytes.len() => bytes[i] = SPECIAL[special],
                1 => bytes.insert(i, SPECIAL[special]),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => {}
            }
        }
        if let Some(cut) = cut {
            let n = cut.index(bytes.len().max(1));
            bytes.truncate(n);
        }
        check(&bytes)?;
    }

    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        check(&bytes)?;
    }

    #[test]
    fn random_markup(parts in prop::collection::vec(prop::sample::select(vec![
        "<rss version=\"2.0\">", "<channel>", "<item>", "</item>", "<title>", "</title>",
        "<feed xmlns=\"http://www.w3.org/2005/Atom\">", "<entry>", "</entry>", "<![CDATA[",
        "]]>", "&amp;", "&lol;", "<!DOCTYPE x [<!ENTITY a \"b\">]>", "<?xml version=\"1.0\"?>",
        "<pubDate>", "</pubDate>", "Mon, 32 Foo 2026", "<link href=\"", "\"/>", "x", "{", "}",
        "\"items\":[", "]", "<content type=\"xhtml\">", "<div>", "</div>",
    ]), 0..60)) {
        check(parts.concat().as_bytes())?;
    }
}
