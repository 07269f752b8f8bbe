//! Machinery shared by `zip` and `tar`: entry-name safety, the staged extractor, listings, the
//! source walk of `create`, publishing a new archive file, and running the blocking work.

pub(crate) mod args;
pub(crate) mod create;
pub(crate) mod entry_name;
pub(crate) mod extract_report;
pub(crate) mod extractor;
pub(crate) mod flags;
pub(crate) mod listing;
pub(crate) mod publish;
pub(crate) mod source;
pub(crate) mod summary;
pub(crate) mod work;
