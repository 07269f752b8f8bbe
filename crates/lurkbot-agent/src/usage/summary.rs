//! Sums of the usage records by day, agent, model or session, and the budgets' fill levels:
//! what `lurkbot usage --json` prints and the `usage.summary` method answers.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use lurkbot_core::{BudgetsConfig, Config, Home};
use serde::Serialize;

use super::{Ledger, UsageRecord, local_date, read_since, zone};

/// What to sum by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// The local day.
    Day,
    /// The agent.
    Agent,
    /// `provider/model`.
    Model,
    /// The session key.
    Session,
}

impl std::str::FromStr for By {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        match raw {
            "day" => Ok(Self::Day),
            "agent" => Ok(Self::Agent),
            "model" => Ok(Self::Model),
            "session" => Ok(Self::Session),
            other => Err(format!(
                "'{other}' is not something to sum by: use day, agent, model or session"
            )),
        }
    }
}

impl By {
    fn name(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Agent => "agent",
            Self::Model => "model",
            Self::Session => "session",
        }
    }
}

/// One sum.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The day, agent, model or session (`total` for the sum of all).
    pub key: String,
    /// Model calls.
    pub calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens from the provider's cache.
    pub cached_input_tokens: u64,
    /// Input plus output.
    pub tokens: u64,
    /// The costed calls' dollars (`null` when none had a price).
    pub cost_usd: Option<f64>,
    /// Calls whose counts are estimates.
    pub estimated_calls: u64,
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

/// A configured cap and how full it is.
#[derive(Debug, Clone, Serialize)]
pub struct Fill {
    /// The setting (`budgets.daily_tokens`, `agents.work.budgets.monthly_usd`).
    pub cap: String,
    /// The cap.
    pub limit: f64,
    /// Used so far in its period.
    pub used: f64,
}

/// The answer of `usage.summary` and `lurkbot usage --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The first local day counted.
    pub since: String,
    /// The zone of the days.
    pub zone: String,
    /// What the rows are by.
    pub by: &'static str,
    /// One per key, in key order.
    pub rows: Vec<Row>,
    /// Every record together.
    pub total: Row,
    /// The caps set, with today's and this month's use.
    pub budgets: Vec<Fill>,
    /// Tokens and dollars per local day and model (the web UI's stacked bars).
    pub days: BTreeMap<String, BTreeMap<String, Cell>>,
}

/// One day's use of one model.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// Input plus output tokens.
    pub tokens: u64,
    /// The costed calls' dollars.
    pub cost_usd: f64,
}

/// `7d` (seven days including today) or `2026-11-01`.
pub fn parse_since(raw: &str, today: NaiveDate) -> Option<NaiveDate> {
    if let Some(days) = raw.strip_suffix('d').and_then(|d| d.parse::<u64>().ok()) {
        return today.checked_sub_days(chrono::Days::new(days.max(1) - 1));
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok()
}

/// The records from `since` summed by `by`, and the budgets' fill at `now_ms`.
pub fn summarize(home: &Home, config: &Config, since: NaiveDate, by: By, now_ms: u64) -> Summary {
    let zone = zone(config);
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row {
        key: "total".into(),
        ..Row::default()
    };
    let mut days: BTreeMap<String, BTreeMap<String, Cell>> = BTreeMap::new();
    for record in read_since(home, &zone, since) {
        let cell = days
            .entry(local_date(&zone, record.ts).to_string())
            .or_default()
            .entry(record.model.clone())
            .or_default();
        cell.tokens += record.tokens();
        cell.cost_usd += record.cost_usd.unwrap_or_default();
        let key = match by {
            By::Day => local_date(&zone, record.ts).to_string(),
            By::Agent => record.agent.clone(),
            By::Model => record.model.clone(),
            By::Session => record.session_key.clone(),
        };
        rows.entry(key.clone())
            .or_insert_with(|| Row {
                key,
                ..Row::default()
            })
            .add(&record);
        total.add(&record);
    }
    let ledger = Ledger::of(home);
    let mut budgets = Vec::new();
    let mut scopes: Vec<(String, &BudgetsConfig, Option<&str>)> = vec![(
        config
            .budgets_key
            .as_deref()
            .unwrap_or("budgets")
            .to_string(),
        &config.budgets,
        None,
    )];
    scopes.extend(config.agents.iter().map(|(id, a)| {
        (
            format!("agents.{id}.budgets"),
            &a.budgets,
            Some(id.as_str()),
        )
    }));
    for (prefix, caps, who) in scopes {
        let (day, month) = ledger.totals(&zone, now_ms, who);
        let entries = [
            (
                "daily_tokens",
                caps.daily_tokens.map(|c| c as f64),
                day.tokens as f64,
            ),
            (
                "monthly_tokens",
                caps.monthly_tokens.map(|c| c as f64),
                month.tokens as f64,
            ),
            ("daily_usd", caps.daily_usd, day.usd),
            ("monthly_usd", caps.monthly_usd, month.usd),
        ];
        for (key, limit, used) in entries {
            if let Some(limit) = limit {
                budgets.push(Fill {
                    cap: format!("{prefix}.{key}"),
                    limit,
                    used,
                });
            }
        }
    }
    Summary {
        since: since.to_string(),
        zone: zone.name,
        by: by.name(),
        rows: rows.into_values().collect(),
        total,
        budgets,
        days,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_days_or_a_date() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 24).unwrap_or_default();
        assert_eq!(parse_since("1d", today), Some(today));
        assert_eq!(
            parse_since("7d", today),
            NaiveDate::from_ymd_opt(2026, 11, 18)
        );
        assert_eq!(
            parse_since("2026-11-01", today),
            NaiveDate::from_ymd_opt(2026, 11, 1)
        );
        assert_eq!(parse_since("last week", today), None);
        assert!("fortnight".parse::<By>().is_err());
    }
}
