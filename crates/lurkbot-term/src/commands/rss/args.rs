//! The typed flags of each `rss` subcommand, built once from the parsed flags; names and URLs
//! are checked here, before any state is read.

use reqwest::Url;

use super::check_name;
use super::http::check_url;
use crate::listing_flags::LIST_MAX_CEILING;
use crate::output::OutFile;
use crate::{CommandError, ErrorCode, ParsedArgs};

/// Default `rss list --max`.
const DEFAULT_LIST_MAX: u64 = 50;
/// Default `--max-items`.
const DEFAULT_MAX_ITEMS: u64 = 20;
/// Default and ceiling of `--timeout-ms`.
const DEFAULT_TIMEOUT_MS: u64 = 15_000;
const MAX_TIMEOUT_MS: u64 = 120_000;
/// Default `--max-bytes` (2 MiB) and its ceiling (64 MiB).
const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024;
const MAX_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// `rss add`.
#[derive(Debug, Clone)]
pub(super) struct AddArgs {
    pub(super) name: String,
    pub(super) url: Url,
}

impl AddArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let name = parsed.get("--name").unwrap_or_default();
        check_name(name)?;
        let url = check_url(parsed.get("--url").unwrap_or_default())?;
        Ok(Self {
            name: name.to_string(),
            url,
        })
    }
}

/// `rss remove`.
#[derive(Debug, Clone)]
pub(super) struct RemoveArgs {
    pub(super) name: String,
}

impl RemoveArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let name = parsed.get("--name").unwrap_or_default();
        check_name(name)?;
        Ok(Self {
            name: name.to_string(),
        })
    }
}

/// `rss list`.
#[derive(Debug, Clone)]
pub(super) struct ListArgs {
    pub(super) max: usize,
    pub(super) out: Option<OutFile>,
}

impl ListArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let max = parsed.number("--max", DEFAULT_LIST_MAX, 0, LIST_MAX_CEILING)?;
        Ok(Self {
            max: usize::try_from(max).unwrap_or(usize::MAX),
            out: OutFile::from_args(parsed, "--out"),
        })
    }
}

/// Which feed `rss fetch` reads.
#[derive(Debug, Clone)]
pub(super) enum FeedSource {
    /// A subscription's name.
    Name(String),
    /// A feed address (stateless).
    Url(Url),
}

/// `rss fetch`.
#[derive(Debug, Clone)]
pub(super) struct FetchArgs {
    pub(super) source: FeedSource,
    pub(super) max_items: usize,
    pub(super) timeout_ms: u64,
    pub(super) max_bytes: u64,
    /// `--force`: skip the conditional-request validators.
    pub(super) force: bool,
    pub(super) out: Option<OutFile>,
}

impl FetchArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let max_items = parsed.number("--max-items", DEFAULT_MAX_ITEMS, 0, LIST_MAX_CEILING)?;
        let timeout_ms = parsed.number("--timeout-ms", DEFAULT_TIMEOUT_MS, 1, MAX_TIMEOUT_MS)?;
        let max_bytes = parsed.number("--max-bytes", DEFAULT_MAX_BYTES, 1, MAX_MAX_BYTES)?;
        let source = match (parsed.get("--name"), parsed.get("--url")) {
            (Some(name), None) => {
                check_name(name)?;
                FeedSource::Name(name.to_string())
            }
            (None, Some(url)) => FeedSource::Url(check_url(url)?),
            _ => {
                return Err(CommandError::new(
                    ErrorCode::InvalidArgs,
                    "give either --name (a subscription) or --url (a feed address), not both",
                )
                .with_hint("usage: rss fetch (--name <name> | --url <url>) [--max-items <n>]"));
            }
        };
        Ok(Self {
            source,
            max_items: usize::try_from(max_items).unwrap_or(usize::MAX),
            timeout_ms,
            max_bytes,
            force: parsed.has("--force"),
            out: OutFile::from_args(parsed, "--out"),
        })
    }
}
