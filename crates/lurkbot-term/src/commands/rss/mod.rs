//! `rss add|list|remove|fetch` (ARCHITECTURE.md §4.5): feed subscriptions and fetching without an external
//! program — conditional GET, hand-checked redirects, a streaming body cap, and XML that is
//! parsed without ever expanding entities.
//!
//! Fetching by `--url` is stateless: no validators are sent and nothing is stored. Fetching by
//! `--name` keeps `fetch_state.json` and `cache/<name>.json` up to date, so the next fetch can be
//! answered by a 304 from the cache.

mod add;
mod args;
mod charset;
mod dates;
mod fetch;
mod http;
mod item;
mod json_feed;
mod list;
mod parse;
mod remove;
mod store;
mod xml_feed;

/// Parses hostile bytes as a feed, for the fuzz targets under `fuzz/` (not an API).
#[doc(hidden)]
pub fn fuzz_parse_feed(body: &[u8]) -> bool {
    parse::parse_feed(body, None, "https://example.com/feed.xml").is_ok()
}

use crate::listing_flags::{LIST_CONFIRM, LIST_OVERWRITE};
use crate::{Command, CommandError, CommandSpec, ErrorCode, FlagSpec, SubcommandSpec};
use args::{AddArgs, FetchArgs, ListArgs, RemoveArgs};

const NAME: FlagSpec = FlagSpec::value(
    "--name",
    "name",
    true,
    "subscription name: lower-case letters, digits and '-' (1-64 characters)",
);

/// The spec of `rss`.
pub(crate) static SPEC: CommandSpec = CommandSpec {
    name: "rss",
    summary: "subscribe to RSS/Atom/JSON feeds and fetch their latest items",
    usage: "rss <add|list|remove|fetch> [flags]",
    subcommands: &[
        SubcommandSpec {
            name: "add",
            summary: "subscribe to a feed, or change the URL of an existing subscription",
            usage: "rss add --name <name> --url <http(s) url>",
            flags: &[
                NAME,
                FlagSpec::value("--url", "url", true, "the feed address (http or https)"),
            ],
            examples: &[
                "rss add --name wapo-politics --url https://www.washingtonpost.com/arcio/rss/category/politics/",
            ],
            run: |ctx, parsed| Box::pin(async move { add::run(ctx, AddArgs::from_args(&parsed)?) }),
        },
        SubcommandSpec {
            name: "list",
            summary: "list the subscriptions",
            usage: "rss list [--max <n>] [--out <path>]",
            flags: &[
                FlagSpec::value(
                    "--max",
                    "n",
                    false,
                    "subscriptions to include in stdout and result (default 50, 0-10000)",
                ),
                FlagSpec::value(
                    "--out",
                    "path",
                    false,
                    "write every subscription, with its fetch state, as JSON to this file",
                ),
                LIST_CONFIRM,
                LIST_OVERWRITE,
            ],
            examples: &[
                "rss list --max 50",
                "rss list --out artifacts/rss/subscriptions.json",
            ],
            run: |ctx, parsed| {
                Box::pin(async move { list::run(ctx, ListArgs::from_args(&parsed)?) })
            },
        },
        SubcommandSpec {
            name: "remove",
            summary: "unsubscribe (its fetch state and cached items go too)",
            usage: "rss remove --name <name>",
            flags: &[NAME],
            examples: &["rss remove --name wapo-politics"],
            run: |ctx, parsed| {
                Box::pin(async move { remove::run(ctx, RemoveArgs::from_args(&parsed)?) })
            },
        },
        SubcommandSpec {
            name: "fetch",
            summary: "download a feed and show its latest items",
            usage: "rss fetch (--name <name> | --url <url>) [--max-items <n>] [--out <path>] [--timeout-ms <ms>] [--max-bytes <n>] [--force]",
            flags: &[
                FlagSpec::value(
                    "--name",
                    "name",
                    false,
                    "a subscription (remembers ETag/Last-Modified and caches items)",
                ),
                FlagSpec::value(
                    "--url",
                    "url",
                    false,
                    "fetch this address directly (stateless)",
                ),
                FlagSpec::value(
                    "--max-items",
                    "n",
                    false,
                    "items to include in stdout and result (default 20, 0-10000)",
                ),
                FlagSpec::value(
                    "--out",
                    "path",
                    false,
                    "write every item with all its fields as JSON to this file",
                ),
                FlagSpec::value(
                    "--timeout-ms",
                    "ms",
                    false,
                    "deadline for the whole download (default 15000, 1-120000)",
                ),
                FlagSpec::value(
                    "--max-bytes",
                    "n",
                    false,
                    "refuse bodies larger than this, after decompression (default 2097152 = 2 MiB) -> ResponseTooLarge",
                ),
                FlagSpec::switch(
                    "--force",
                    "ignore the stored ETag/Last-Modified and download the whole feed",
                ),
                LIST_CONFIRM,
                LIST_OVERWRITE,
            ],
            examples: &[
                "rss fetch --name wapo-politics --max-items 20",
                "rss fetch --name wapo-politics --max-items 100 --out artifacts/rss/wapo-politics-items.json",
                "rss fetch --url https://blog.rust-lang.org/feed.xml --max-items 5",
            ],
            run: |ctx, parsed| {
                Box::pin(async move { fetch::run(ctx, FetchArgs::from_args(&parsed)?).await })
            },
        },
    ],
    flags: &[],
    examples: &[
        "rss add --name rust-blog --url https://blog.rust-lang.org/feed.xml",
        "rss fetch --name rust-blog",
        "rss list",
    ],
    skill: "rss-cli",
    credentials: &[],
    needs_gateway: false,
};

/// The `rss` command.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RssCommand;

impl Command for RssCommand {
    fn spec(&self) -> &'static CommandSpec {
        &SPEC
    }
}

/// Parses a feed document (RSS 0.9x/1.0/2.0, Atom or JSON Feed) into the normalized items
/// `rss fetch --out` writes, with the same rules (encodings, no entity expansion, depth limit).
/// `url` resolves relative links; `content_type` may name the charset.
///
/// # Errors
/// `ParseError` for a body that is not a feed.
pub fn parse_items(
    body: &[u8],
    content_type: Option<&str>,
    url: &str,
) -> Result<Vec<serde_json::Value>, CommandError> {
    let feed = parse::parse_feed(body, content_type, url)?;
    Ok(feed
        .items
        .iter()
        .map(|item| serde_json::json!(item))
        .collect())
}

/// Checks a subscription name: 1-64 lower-case letters, digits and `-`, not starting or ending
/// with `-` (it could be read as a flag, and it names the cache file).
///
/// # Errors
/// `InvalidArgs` showing the rule.
fn check_name(name: &str) -> Result<(), CommandError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(CommandError::new(
            ErrorCode::InvalidArgs,
            format!("'{name}' is not a valid subscription name"),
        )
        .with_hint("use 1-64 lower-case letters, digits and '-', e.g. rust-blog"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["a", "rust-blog", "wapo-politics2", "0day"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let long = "a".repeat(65);
        for bad in [
            "",
            "-x",
            "x-",
            "Rust",
            "a_b",
            "a/b",
            "..",
            "a b",
            "ü",
            long.as_str(),
        ] {
            assert_eq!(
                check_name(bad).unwrap_err().code,
                ErrorCode::InvalidArgs,
                "{bad}"
            );
        }
    }
}
