//! Flags `zip` and `tar` share.

use crate::FlagSpec;

/// `--max` of listings.
pub(crate) const MAX: FlagSpec = FlagSpec::value(
    "--max",
    "n",
    false,
    "entries to include in stdout and result (default 200, 0-10000)",
);
/// `--out` of listings.
pub(crate) const LIST_OUT: FlagSpec = FlagSpec::value(
    "--out",
    "path",
    false,
    "write the full listing as JSON to this home-relative file",
);
/// `--confirm` of listings (only for replacing an `--out` file).
pub(crate) const LIST_CONFIRM: FlagSpec = FlagSpec::switch(
    "--confirm",
    "with --overwrite: replace an existing --out file",
);
/// `--overwrite` of listings.
pub(crate) const LIST_OVERWRITE: FlagSpec = FlagSpec::switch(
    "--overwrite",
    "replace an existing --out file outside artifacts/ (needs --confirm)",
);
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
