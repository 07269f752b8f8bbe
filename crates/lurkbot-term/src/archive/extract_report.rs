//! What an extraction reports: counts of skipped entries by reason, the first skipped names,
//! and what was written.

use serde::Serialize;

/// Counts of entries that were not extracted, by reason.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Skipped {
    /// The target exists (and `--overwrite --confirm` was not given, or it cannot be replaced).
    pub(crate) existing: u64,
    /// The name is absolute, has `..`, `:` or NUL, or crosses a link in `--dest`.
    pub(crate) unsafe_path: u64,
    /// The target is a secret or LurkBot's own state (ARCHITECTURE.md §4.6), resolved: never written,
    /// with or without `--overwrite`.
    pub(crate) protected: u64,
    /// A symbolic or hard link entry (never created).
    pub(crate) unsafe_link: u64,
    /// The entry alone declares more bytes than `--max-bytes`.
    pub(crate) too_large: u64,
    /// Device, FIFO or other special entries.
    pub(crate) unsupported: u64,
}

/// Why one entry was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SkipReason {
    /// See [`Skipped::existing`].
    Existing,
    /// See [`Skipped::unsafe_path`].
    UnsafePath(&'static str),
    /// See [`Skipped::protected`].
    Protected(&'static str),
    /// See [`Skipped::unsafe_link`].
    UnsafeLink,
    /// See [`Skipped::too_large`].
    TooLarge,
    /// See [`Skipped::unsupported`].
    Unsupported,
}

impl SkipReason {
    pub(crate) fn describe(self) -> String {
        match self {
            Self::Existing => "exists (add --overwrite --confirm to replace)".into(),
            Self::UnsafePath(why) => format!("unsafe path: {why}"),
            Self::Protected(why) => format!("protected: {why}"),
            Self::UnsafeLink => "link entries are never created".into(),
            Self::TooLarge => "declares more bytes than --max-bytes".into(),
            Self::Unsupported => "special file (device or FIFO)".into(),
        }
    }
}

/// One skipped entry, named in the result.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SkippedEntry {
    /// The entry's name as shown in listings.
    pub(crate) name: String,
    /// Why it was skipped.
    pub(crate) reason: String,
}

/// What an extraction did.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExtractReport {
    /// Entries read from the archive.
    pub(crate) entries_total: u64,
    /// Files moved into `--dest`.
    pub(crate) files_written: u64,
    /// Directories created: `--dest` itself (and missing parents) and folders under it.
    pub(crate) dirs_created: u64,
    /// Bytes of the files moved into `--dest`.
    pub(crate) bytes_written: u64,
    /// Skip counts.
    pub(crate) skipped: Skipped,
    /// The first skipped entries with their reasons.
    pub(crate) skipped_entries: Vec<SkippedEntry>,
}
