//! Usage records and budgets (ARCHITECTURE.md §7c). Every model call appends one record to
//! `usage/YYYY-MM.jsonl` (the month of the user's zone) — or, when the home's state is in
//! PostgreSQL, to the store's `usage` table, which every gateway reads ([`lurkbot_state::shared::share`]):
//! the provider's token counts, or an
//! estimate marked `estimated` when it reported none, and a cost when the model has prices in
//! `[models]`. [`Ledger`] keeps the day's and month's totals from those files for the caps that
//! [`check`] applies before each call.

mod budget;
mod combined;
mod ledger;
mod meter;
mod summary;

use std::path::{Path, PathBuf};

use lurkbot_core::{Config, Home, Zone};
use lurkbot_llm::Usage;
use serde::{Deserialize, Serialize};

pub use budget::{BudgetExceeded, Caps, RunBudget, call_usd, check, check_run, check_with};

/// How a refused call's error begins (cron tells it from other failures by this).
pub const BUDGET_EXCEEDED: &str = "BudgetExceeded";
pub use ledger::{Held, Ledger, Totals};
pub(crate) use meter::Meter;
pub use summary::{By, Cell, Fill, Row, Summary, parse_since, summarize};

/// The folder of the usage files.
pub const USAGE_DIR: &str = "usage";

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    /// When, ms since the epoch.
    pub ts: u64,
    /// The agent.
    pub agent: String,
    /// The session.
    pub session_key: String,
    /// `provider/model`.
    pub model: String,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// US dollars, when the model has prices in `[models]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The provider reported no usage: the counts are estimates (characters / 4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl UsageRecord {
    /// Input plus output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// A record of `usage` for a call of `model`; `estimate` gives (input, output) when the
    /// provider reported nothing.
    pub fn new(
        config: &Config,
        agent: &str,
        session: &str,
        model: &str,
        usage: Usage,
        estimate: impl FnOnce() -> (u64, u64),
    ) -> Self {
        let reported = usage.input_tokens + usage.output_tokens > 0;
        let (input, output) = if reported {
            (usage.input_tokens, usage.output_tokens)
        } else {
            estimate()
        };
        let cached = usage.cached_input_tokens;
        let cost_usd = config
            .models
            .get(model)
            .and_then(|price| price.cost_usd(input, output, cached));
        Self {
            ts: lurkbot_core::now_ms(),
            agent: agent.to_string(),
            session_key: session.to_string(),
            model: model.to_string(),
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: (cached > 0).then_some(cached),
            cost_usd,
            estimated: !reported,
        }
    }
}

/// The user's zone for days and months: `agent.timezone`, else the system's, else UTC.
pub fn zone(config: &Config) -> Zone {
    Zone::of(config.agent.timezone.as_deref()).unwrap_or_else(|_| Zone::utc())
}

/// Today in `zone`.
pub fn today(zone: &Zone) -> chrono::NaiveDate {
    local_date(zone, lurkbot_core::now_ms())
}

/// The local date of `ms` in `zone`.
pub(crate) fn local_date(zone: &Zone, ms: u64) -> chrono::NaiveDate {
    use chrono::TimeZone;
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    chrono::Utc
        .timestamp_millis_opt(ms)
        .single()
        .map(|t| t.with_timezone(&zone.offset_at(ms)).date_naive())
        .unwrap_or_default()
}

/// The file of the month `date` is in.
pub(crate) fn month_file(home: &Home, date: chrono::NaiveDate) -> PathBuf {
    home.join(USAGE_DIR)
        .join(format!("{}.jsonl", date.format("%Y-%m")))
}

/// Appends `record` to its month's file, or to the shared store's records.
///
/// # Errors
/// The folder or the file failing; the store failing.
pub fn append(
    home: &Home,
    zone: &Zone,
    record: &UsageRecord,
) -> Result<(), lurkbot_core::CoreError> {
    let path = month_file(home, local_date(zone, record.ts));
    let line = serde_json::to_string(record)
        .map_err(|e| lurkbot_core::CoreError::io("encode a record for", &path, e.into()))?;
    if let Some(store) = Ledger::of(home).shared_store() {
        // A record the store cannot take now is kept and written once it answers: never lost.
        if let Err(e) = store.record_usage(record.ts, &line) {
            tracing::warn!(error = %e, "usage record not stored now: kept, written once the store answers");
        }
        return Ok(());
    }
    append_line(home, &path, &line)
}

/// Appends one record's `line` to the month file `path` of `home`.
fn append_line(home: &Home, path: &Path, line: &str) -> Result<(), lurkbot_core::CoreError> {
    lurkbot_core::create_private_dir(&home.join(USAGE_DIR))?;
    lurkbot_core::append_private_line(path, line)
}

/// Every record from `since` (a local date) on, oldest first — from the month files, or the
/// shared store's; lines that are not records are skipped.
pub fn read_since(home: &Home, zone: &Zone, since: chrono::NaiveDate) -> Vec<UsageRecord> {
    if let Some(store) = Ledger::of(home).shared_store() {
        // A day starts at most 14 h before it starts in UTC; the zone's date then filters.
        let from = since
            .and_hms_opt(0, 0, 0)
            .map_or(0, |t| t.and_utc().timestamp_millis() - 14 * 3_600_000);
        let rows = match store.usage_after(0, u64::try_from(from).unwrap_or_default()) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "usage records not read from the state store");
                Vec::new()
            }
        };
        return rows
            .iter()
            .filter_map(|row| serde_json::from_str::<UsageRecord>(&row.record).ok())
            .filter(|r| local_date(zone, r.ts) >= since)
            .collect();
    }
    read_files_since(home, zone, since)
}

/// Every record of the home's month files (for `state migrate`): (ms, the line), oldest file
/// first.
pub fn file_records(home: &Home) -> Vec<(u64, String)> {
    let epoch = chrono::NaiveDate::default();
    read_files_since(home, &Zone::utc(), epoch)
        .into_iter()
        .filter_map(|r| Some((r.ts, serde_json::to_string(&r).ok()?)))
        .collect()
}

/// Whether the home has month files (`state migrate` back into the home needs none).
pub fn has_files(home: &Home) -> bool {
    std::fs::read_dir(home.join(USAGE_DIR)).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
    })
}

/// Writes `records` (ms, the record) as the home's month files in `zone`, each file whole
/// and atomically (`state migrate` back into the home).
///
/// # Errors
/// A file failing.
pub fn write_files(
    home: &Home,
    zone: &Zone,
    records: &[(u64, String)],
) -> Result<usize, lurkbot_core::CoreError> {
    let mut months: std::collections::BTreeMap<PathBuf, String> = Default::default();
    for (ts, line) in records {
        let text = months
            .entry(month_file(home, local_date(zone, *ts)))
            .or_default();
        text.push_str(line);
        text.push('\n');
    }
    lurkbot_core::create_private_dir(&home.join(USAGE_DIR))?;
    for (path, text) in &months {
        lurkbot_core::write_atomic(path, text.as_bytes())?;
    }
    Ok(months.len())
}

fn read_files_since(home: &Home, zone: &Zone, since: chrono::NaiveDate) -> Vec<UsageRecord> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join(USAGE_DIR))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let first_month = since.format("%Y-%m").to_string();
    files
        .iter()
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| s.to_string_lossy().as_ref() >= first_month.as_str())
        })
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str::<UsageRecord>(l).ok())
                .collect::<Vec<_>>()
        })
        .filter(|r| local_date(zone, r.ts) >= since)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_without_reported_usage_is_estimated_and_marked() {
        let config = Config::default();
        let reported = Usage {
            input_tokens: 120,
            output_tokens: 7,
            cached_input_tokens: 100,
        };
        let r = UsageRecord::new(
            &config,
            "main",
            "agent:main:main",
            "openai/m",
            reported,
            || (1, 1),
        );
        assert_eq!(
            (r.input_tokens, r.output_tokens, r.estimated),
            (120, 7, false)
        );
        assert_eq!(r.cached_input_tokens, Some(100));
        assert_eq!(r.cost_usd, None, "no price, no cost");
        let r = UsageRecord::new(
            &config,
            "main",
            "agent:main:main",
            "openai/m",
            Usage::default(),
            || (900, 12),
        );
        assert_eq!(
            (r.input_tokens, r.output_tokens, r.estimated),
            (900, 12, true)
        );
        let line = serde_json::to_string(&r).unwrap_or_default();
        assert!(line.contains("\"estimated\":true") && !line.contains("cachedInputTokens"));
    }
}
