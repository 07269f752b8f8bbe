//! `lurkbot usage [--since 7d|YYYY-MM-DD] [--by agent|model|session|day] [--json]`: what model
//! calls used, from `usage/*.jsonl`, summed by one key, and the budgets' fill
//! (ARCHITECTURE.md §7c).

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Args;
use lurkbot_agent::usage::{By, parse_since, summarize, today, zone};
use lurkbot_core::{Config, Home, layout};

/// `lurkbot usage`.
#[derive(Debug, Args)]
pub(crate) struct UsageArgs {
    /// From this local date (`2026-11-01`) or this many days back including today (`7d`).
    #[arg(long, value_name = "WHEN", default_value = "30d")]
    since: String,
    /// Sum by day, agent, model or session.
    #[arg(long, value_name = "KEY", default_value = "day")]
    by: String,
    /// `{since, zone, by, rows: [{key, calls, inputTokens, outputTokens, cachedInputTokens,
    /// tokens, costUsd, estimatedCalls}], total, budgets: [{cap, limit, used}]}`.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(home_path: &Path, args: &UsageArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    lurkbot_agent::setup::attach_state(&home, &config)
        .map_err(|e| CliError::failed("usage", e.to_string()))?;
    let by: By = args.by.parse().map_err(|e| CliError::usage("usage", e))?;
    let since = parse_since(&args.since, today(&zone(&config))).ok_or_else(|| {
        CliError::usage(
            "usage",
            format!(
                "--since '{}' is not a number of days (7d) or a date (2026-11-01)",
                args.since
            ),
        )
    })?;
    let summary = summarize(&home, &config, since, by, lurkbot_core::now_ms());
    if args.json {
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&summary)?))?;
        return Ok(());
    }
    let mut out = format!(
        "usage since {} ({}), by {}\n",
        summary.since, summary.zone, summary.by
    );
    let money = |c: Option<f64>| c.map_or_else(|| "-".to_string(), |c| format!("${c:.4}"));
    for row in summary.rows.iter().chain(std::iter::once(&summary.total)) {
        out.push_str(&format!(
            "{:<40} {:>6} calls {:>12} in {:>10} out {:>10}{}\n",
            row.key,
            row.calls,
            row.input_tokens,
            row.output_tokens,
            money(row.cost_usd),
            if row.estimated_calls > 0 {
                format!("  ({} estimated)", row.estimated_calls)
            } else {
                String::new()
            }
        ));
    }
    for fill in &summary.budgets {
        out.push_str(&format!(
            "{}: {} of {} ({:.0} %)\n",
            fill.cap,
            fill.used,
            fill.limit,
            100.0 * fill.used / fill.limit.max(f64::MIN_POSITIVE)
        ));
    }
    crate::run::print_stdout(&out)?;
    Ok(())
}
