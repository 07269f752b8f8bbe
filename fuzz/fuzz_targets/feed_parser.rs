//! The feed parser (RSS, Atom, JSON Feed; charset detection; depth check) on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = lurkbot_term::commands::rss::fuzz_parse_feed(bytes);
});
