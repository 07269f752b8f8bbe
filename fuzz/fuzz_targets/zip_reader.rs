//! `zip list` and `zip extract` on arbitrary bytes: no panic, a stable error code, no escape.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lurkbot_fuzz::ArchiveHarness;

fuzz_target!(|bytes: &[u8]| {
    ArchiveHarness::with(|h| h.run("zip", "in.zip", bytes, &["ZipError", "ArchiveTooLarge"]));
});
