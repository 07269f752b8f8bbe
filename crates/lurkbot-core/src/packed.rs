//! Text embedded in the binary gzip-compressed (the web UI's page, the config schema): each
//! crate's `build.rs` compresses its file into `OUT_DIR` with `flate2`, which the binary links
//! anyway for archives, and the text is unpacked when it is used. The page and the schema are
//! 84 KB as written and 25 KB packed (ARCHITECTURE.md §9: the binary's budget).

use std::io::Read;

/// The text of `packed`, a gzip stream a build script wrote; `None` when it does not unpack to
/// UTF-8 (it cannot: the build wrote it from a UTF-8 file).
pub fn unpack_text(packed: &[u8]) -> Option<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(packed)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Whether an `Accept-Encoding` header's value accepts gzip (RFC 9110 §12.5.3: `gzip`,
/// `x-gzip` or `*`, unless its weight is `q=0`).
pub fn accepts_gzip(accept_encoding: &str) -> bool {
    accept_encoding.split(',').any(|entry| {
        let mut parts = entry.split(';');
        let coding = parts.next().unwrap_or("").trim();
        let named = ["gzip", "x-gzip", "*"]
            .iter()
            .any(|name| coding.eq_ignore_ascii_case(name));
        let refused = parts.any(|param| {
            let param = param.trim();
            let weight = param
                .strip_prefix("q=")
                .or_else(|| param.strip_prefix("Q="));
            weight.is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
        });
        named && !refused
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn unpacks_what_gzip_packed_and_refuses_what_it_did_not() {
        let mut packer = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        packer.write_all("LurkBot ✓".as_bytes()).unwrap();
        let packed = packer.finish().unwrap();
        assert_eq!(unpack_text(&packed).as_deref(), Some("LurkBot ✓"));
        assert_eq!(unpack_text(b"not gzip"), None);
    }

    #[test]
    fn gzip_is_accepted_as_rfc_9110_weighs_it() {
        for yes in [
            "gzip",
            "gzip, deflate, br, zstd",
            "br;q=1.0, GZIP;q=0.5",
            "x-gzip",
            "*",
        ] {
            assert!(accepts_gzip(yes), "{yes}");
        }
        for no in [
            "",
            "identity",
            "br, deflate",
            "gzip;q=0",
            "gzip; q=0.0",
            "gzipx",
        ] {
            assert!(!accepts_gzip(no), "{no}");
        }
    }
}
