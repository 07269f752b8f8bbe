//! `lurkbot search QUERY… [--count N] [--freshness day|week|month|year] [--country CC]
//! [--language LL] [--json]`: the owner's web search, on the same code path as the `web_search`
//! tool (the configured providers in order, the 15-minute cache, the web log).

use std::path::Path;

use clap::Args;
use lurkbot_agent::web::search::{Freshness, MAX_COUNT, SearchError, SearchRequest, search};
use lurkbot_core::{Config, Home, layout};

use crate::error::{CliError, CliResult};

/// `lurkbot search`.
#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    /// What to look for (several words are one query).
    #[arg(required = true, value_name = "QUERY")]
    query: Vec<String>,
    /// How many results (1–10; default `[tools.web.search] count`, 5).
    #[arg(long, short = 'n', value_name = "N")]
    count: Option<u8>,
    /// Only results from the last day, week, month or year.
    #[arg(long, value_name = "WHEN")]
    freshness: Option<String>,
    /// Results for this country (two letters: us, de).
    #[arg(long, value_name = "CC")]
    country: Option<String>,
    /// Results in this language (two letters: en, de).
    #[arg(long, value_name = "LL")]
    language: Option<String>,
    /// `{provider, results: [{title, url, snippet, published?}], cached, passed_over?}`.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(home_path: &Path, args: &SearchArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    let freshness = match &args.freshness {
        None => None,
        Some(f) => Some(Freshness::parse(f).ok_or_else(|| {
            CliError::usage(
                "search",
                format!("--freshness is day, week, month or year, not '{f}'"),
            )
        })?),
    };
    let request = SearchRequest {
        query: args.query.join(" "),
        count: args
            .count
            .unwrap_or_else(|| config.tools.web.search.count.clamp(1, MAX_COUNT)),
        freshness,
        country: args.country.clone(),
        language: args.language.clone(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let found = match runtime.block_on(search(&home, &config, request, "cli")) {
        Ok(found) => found,
        Err(e @ (SearchError::BadRequest(_) | SearchError::UnknownProvider(_))) => {
            return Err(CliError::usage("search", e.to_string()));
        }
        Err(e) => return Err(CliError::failed("search", format!("{}: {e}", e.code()))),
    };
    if args.json {
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&found)?))?;
        return Ok(());
    }
    let mut out = String::new();
    for (i, hit) in found.results.iter().enumerate() {
        let title = lurkbot_core::printable(&hit.title);
        let snippet = lurkbot_core::printable(&hit.snippet);
        out.push_str(&format!(
            "{}. {title}\n   {}\n",
            i + 1,
            lurkbot_core::printable(&hit.url)
        ));
        if let Some(published) = &hit.published {
            out.push_str(&format!("   {}\n", lurkbot_core::printable(published)));
        }
        if !snippet.is_empty() {
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    if found.results.is_empty() {
        out.push_str("no results\n");
    }
    out.push_str(&format!(
        "({}{})\n",
        found.provider,
        if found.cached { ", cached" } else { "" }
    ));
    crate::run::print_stdout(&out)?;
    Ok(())
}
