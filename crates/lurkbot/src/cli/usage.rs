//! `lurkbot usage [--since 7d|YYYY-MM-DD] [--by agent|model|session|day] [--json]`: what model
//! calls used, from `usage/*.jsonl`, summed by one key (ARCHITECTURE.md §6.2).

use crate::error::{CliError, CliResult};
use std::collections::BTreeMap;
use std::path::Path;

use chrono::NaiveDate;
use clap::{Args, ValueEnum};
use lurkbot_agent::usage::{UsageRecord, read_since, zone};
use lurkbot_core::{Config, Home, layout};
use serde::Serialize;

/// What to sum by.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum By {
    /// The local day (default).
    Day,
    /// The agent.
    Agent,
    /// `provider/model`.
    Model,
    /// The session key.
    Session,
}

/// `lurkbot usage`.
#[derive(Debug, Args)]
pub(crate) struct UsageArgs {
    /// From this local date (`2026-11-01`) or this many days back including today (`7d`).
    #[arg(long, value_name = "WHEN", default_value = "30d")]
    since: String,
    /// Sum by day, agent, model or session.
    #[arg(long, value_enum, default_value = "day")]
    by: By,
    /// `{since, by, rows: [{key, calls, inputTokens, outputTokens, cachedInputTokens, tokens,
    /// costUsd, estimatedCalls}], total}`.
    #[arg(long)]
    json: bool,
}

/// One sum.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    key: String,
    calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    cached_input_tokens: u64,
    tokens: u64,
    /// The sum of the costed calls (`null` when none had a price).
    cost_usd: Option<f64>,
    /// Calls whose counts are estimates (the provider reported none).
    estimated_calls: u64,
}

impl Row {
    fn add(&mut self, r: &UsageRecord) {
        self.calls += 1;
        self.input_tokens += r.input_tokens;
        self.output_tokens += r.output_tokens;
        self.cached_input_tokens += r.cached_input_tokens.unwrap_or_default();
        self.tokens += r.tokens();
        if let Some(cost) = r.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or_default() + cost);
        }
        self.estimated_calls += u64::from(r.estimated);
    }
}

fn since_date(raw: &str, today: NaiveDate) -> Option<NaiveDate> {
    if let Some(days) = raw.strip_suffix('d').and_then(|d| d.parse::<u64>().ok()) {
        return today.checked_sub_days(chrono::Days::new(days.max(1) - 1));
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok()
}

pub(crate) fn run(home_path: &Path, args: &UsageArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    let zone = zone(&config);
    let today = lurkbot_agent::usage::today(&zone);
    let since = since_date(&args.since, today).ok_or_else(|| {
        CliError::usage(
            "usage",
            format!(
                "--since '{}' is not a number of days (7d) or a date (2026-11-01)",
                args.since
            ),
        )
    })?;
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row {
        key: "total".into(),
        ..Row::default()
    };
    for record in read_since(&home, &zone, since) {
        let key = match args.by {
            By::Day => lurkbot_agent::usage::day_of(&zone, record.ts).to_string(),
            By::Agent => record.agent.clone(),
            By::Model => record.model.clone(),
            By::Session => record.session_key.clone(),
        };
        let row = rows.entry(key.clone()).or_insert_with(|| Row {
            key,
            ..Row::default()
        });
        row.add(&record);
        total.add(&record);
    }
    let by = format!("{:?}", args.by).to_lowercase();
    if args.json {
        let value = serde_json::json!({
            "since": since.to_string(),
            "zone": zone.name,
            "by": by,
            "rows": rows.values().collect::<Vec<_>>(),
            "total": total,
        });
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        return Ok(());
    }
    let mut out = format!("usage since {since} ({}), by {by}\n", zone.name);
    let money = |c: Option<f64>| c.map_or_else(|| "-".to_string(), |c| format!("${c:.4}"));
    for row in rows.values().chain(std::iter::once(&total)) {
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
    crate::run::print_stdout(&out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_days_or_a_date() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 24).unwrap_or_default();
        assert_eq!(since_date("1d", today), Some(today));
        assert_eq!(
            since_date("7d", today),
            NaiveDate::from_ymd_opt(2026, 11, 18)
        );
        assert_eq!(
            since_date("2026-11-01", today),
            NaiveDate::from_ymd_opt(2026, 11, 1)
        );
        assert_eq!(since_date("last week", today), None);
    }
}
