//! `tar list` and `tar extract` on arbitrary bytes (plain, gzip, bzip2 or xz, detected from the
//! content): no panic, a stable error code, no escape.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lurkbot_fuzz::ArchiveHarness;

fuzz_target!(|bytes: &[u8]| {
    ArchiveHarness::with(|h| h.run("tar", "in.tar", bytes, &["TarError", "ArchiveTooLarge"]));
});
