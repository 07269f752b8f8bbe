//! The flags and caps of every command that lists things (`zip list`, `tar list`, `rss list`,
//! `rss fetch`, `cal list-events`, …): `--max` with its default and ceiling, `--out` for the
//! whole listing, and `--confirm` / `--overwrite` to replace an existing `--out` file.

use crate::FlagSpec;

/// Default and ceiling of `--max` for listings.
pub(crate) const DEFAULT_LIST_MAX: u64 = 200;
/// The largest `--max` accepted (entries in `result`; the full listing goes to `--out`).
pub(crate) const LIST_MAX_CEILING: u64 = 10_000;
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
