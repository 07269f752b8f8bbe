//! The feed parser (RSS, Atom, JSON Feed; charset normalisation; depth check) on arbitrary bytes.
//!
//! `parse_feed` turns a panic inside the third-party XML reader (quick-xml) into a `ParseError`,
//! so a hostile feed cannot crash LurkBot. libFuzzer's hook aborts on every panic, caught or
//! not; this target lets that crate's panics unwind to that catch (they are reported upstream,
//! not ours to fix here) and still aborts on a panic anywhere else, our own feed reader
//! included.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_parser = info
                .location()
                .is_some_and(|l| l.file().contains("/quick-xml-"));
            if !in_parser {
                abort(info);
            }
        }));
    },
    |bytes: &[u8]| {
        let _ = lurkbot_term::fuzz_parse_feed(bytes);
    }
);
