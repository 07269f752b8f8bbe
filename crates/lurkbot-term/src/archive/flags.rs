//! Flags `zip` and `tar` share (the listing flags every command uses are in
//! `crate::listing_flags`).

use crate::FlagSpec;

/// `--dest` of extract.
pub(crate) const DEST: FlagSpec = FlagSpec::value(
    "--dest",
    "dir",
    true,
    "the folder to extract into (created if missing)",
);
/// `--confirm` of extract and create.
pub(crate) const CONFIRM: FlagSpec =
    FlagSpec::switch("--confirm", "required: allow writing many files");
/// `--overwrite` of extract and create.
pub(crate) const OVERWRITE: FlagSpec = FlagSpec::switch(
    "--overwrite",
    "replace existing files (honoured only with --confirm)",
);
/// `--max-files` of extract.
pub(crate) const MAX_FILES: FlagSpec = FlagSpec::value(
    "--max-files",
    "n",
    false,
    "refuse archives with more entries (default 2000) -> ArchiveTooLarge",
);
/// `--max-bytes` of extract.
pub(crate) const MAX_BYTES: FlagSpec = FlagSpec::value(
    "--max-bytes",
    "n",
    false,
    "refuse to write more bytes (default 536870912 = 512 MiB) -> ArchiveTooLarge",
);
/// `--src` of create.
pub(crate) const SRC: FlagSpec = FlagSpec::value(
    "--src",
    "path",
    true,
    "the file or folder to archive, relative to the home",
);
