//! The caps checked before a model call: `[budgets]` for every agent together and
//! `[agents.<id>.budgets]` for one, each a day's and a month's tokens and dollars. A call whose
//! estimated tokens (and their cost at the model's input price) would pass a cap is not made.

use chrono::{Datelike, NaiveDate};
use lurkbot_core::{BudgetsConfig, Config, Zone};

use super::ledger::{Ledger, Totals};
use super::local_date;

/// A cap a call would pass: which, its limit, what was used, and when it resets.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "BudgetExceeded: {cap} is {limit} and {used} {period} were used; this call needs about {needed} more. It resets at {resets} ({zone}). Raise it with `lurkbot config set {cap} N`, or wait."
)]
pub struct BudgetExceeded {
    /// The setting, e.g. `budgets.daily_tokens` or `agents.work.budgets.monthly_usd`.
    pub cap: String,
    /// The cap, as written (`100000 tokens`, `$5.00`).
    pub limit: String,
    /// What was used in the period.
    pub used: String,
    /// `today` or `this month`.
    pub period: &'static str,
    /// The call's estimate.
    pub needed: String,
    /// The next local midnight or first of the month, `YYYY-MM-DD 00:00`.
    pub resets: String,
    /// The zone of days and months.
    pub zone: String,
}

/// Checks the caps for a call of `model` by `agent` estimated at `tokens` input tokens.
///
/// # Errors
/// [`BudgetExceeded`] for the first cap the call would pass.
pub fn check(
    config: &Config,
    ledger: &Ledger,
    zone: &Zone,
    now_ms: u64,
    agent: &str,
    model: &str,
    tokens: u64,
) -> Result<(), Box<BudgetExceeded>> {
    check_with(config, zone, now_ms, agent, model, tokens, &|who| {
        ledger.totals(zone, now_ms, who)
    })
}

/// What a call of `tokens` input tokens to `model` costs in dollars (0 without prices).
pub fn call_usd(config: &Config, model: &str, tokens: u64) -> f64 {
    config
        .models
        .get(model)
        .and_then(|p| p.cost_usd(tokens, 0, 0))
        .unwrap_or_default()
}

/// [`check`] against `totals` (today's and this month's, for an agent or `None`: all).
///
/// # Errors
/// [`BudgetExceeded`] for the first cap the call would pass.
pub fn check_with(
    config: &Config,
    zone: &Zone,
    now_ms: u64,
    agent: &str,
    model: &str,
    tokens: u64,
    totals: &dyn Fn(Option<&str>) -> (Totals, Totals),
) -> Result<(), Box<BudgetExceeded>> {
    Caps::of(config, agent, model, tokens).check(zone, now_ms, totals)
}

/// The caps one call is checked against, taken from the settings and owned: a check can run
/// where the settings are not (inside the state store's transaction, on its thread).
#[derive(Debug, Clone)]
pub struct Caps {
    /// (the setting's prefix, its caps, whose totals: `None` every agent's).
    scopes: Vec<(String, BudgetsConfig, Option<String>)>,
    /// The call's estimated tokens.
    tokens: u64,
    /// Their cost at the model's input price.
    usd: f64,
}

impl Caps {
    /// Whether no cap applies (no `[budgets]` nor `[agents.<id>.budgets]` value is set).
    pub fn is_empty(&self) -> bool {
        self.scopes.is_empty()
    }

    /// The caps that apply to a call of `tokens` input tokens to `model` by `agent`.
    pub fn of(config: &Config, agent: &str, model: &str, tokens: u64) -> Self {
        let mut scopes = Vec::new();
        if config.budgets.any() {
            let prefix = config.budgets_key.as_deref().unwrap_or("budgets");
            scopes.push((prefix.to_string(), config.budgets.clone(), None));
        }
        if let Some(own) = config.agents.get(agent).map(|a| &a.budgets)
            && own.any()
        {
            scopes.push((
                format!("agents.{agent}.budgets"),
                own.clone(),
                Some(agent.to_string()),
            ));
        }
        Self {
            scopes,
            tokens,
            usd: call_usd(config, model, tokens),
        }
    }

    /// Whether no cap applies.
    pub fn none(&self) -> bool {
        self.scopes.is_empty()
    }

    /// Checks the call against `totals` (today's and this month's, for an agent or `None`).
    ///
    /// # Errors
    /// [`BudgetExceeded`] for the first cap the call would pass.
    pub fn check(
        &self,
        zone: &Zone,
        now_ms: u64,
        totals: &dyn Fn(Option<&str>) -> (Totals, Totals),
    ) -> Result<(), Box<BudgetExceeded>> {
        let (tokens, usd) = (self.tokens, self.usd);
        let today = local_date(zone, now_ms);
        for (prefix, budgets, who) in &self.scopes {
            let (day, month) = totals(who.as_deref());
            let over = |period: &'static str, used: Totals| -> Option<BudgetExceeded> {
                let (tokens_cap, usd_cap, key_tokens, key_usd, resets) = if period == "today" {
                    (
                        budgets.daily_tokens,
                        budgets.daily_usd,
                        "daily_tokens",
                        "daily_usd",
                        today.succ_opt(),
                    )
                } else {
                    (
                        budgets.monthly_tokens,
                        budgets.monthly_usd,
                        "monthly_tokens",
                        "monthly_usd",
                        next_month(today),
                    )
                };
                let exceeded =
                    |cap: String, limit: String, used: String, needed: String| BudgetExceeded {
                        cap,
                        limit,
                        used,
                        period,
                        needed,
                        resets: resets.map(|d| format!("{d} 00:00")).unwrap_or_default(),
                        zone: zone.name.clone(),
                    };
                if let Some(cap) = tokens_cap
                    && used.tokens + tokens > cap
                {
                    return Some(exceeded(
                        format!("{prefix}.{key_tokens}"),
                        format!("{cap} tokens"),
                        format!("{} tokens", used.tokens),
                        format!("{tokens} tokens"),
                    ));
                }
                if let Some(cap) = usd_cap
                    && used.usd + usd > cap
                {
                    return Some(exceeded(
                        format!("{prefix}.{key_usd}"),
                        format!("${cap:.2}"),
                        format!("${:.4}", used.usd),
                        format!("${usd:.4}"),
                    ));
                }
                None
            };
            if let Some(e) = over("today", day).or_else(|| over("this month", month)) {
                return Err(Box::new(e));
            }
        }
        Ok(())
    }
}

/// A cap on one run (a cron job's `budgetTokens`, a sub-agent's `runBudgetTokens`) or on one
/// session's day (`heartbeat.budget_tokens`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBudget {
    /// The setting, as the error names it.
    pub cap: String,
    /// Tokens allowed.
    pub limit: u64,
    /// Tokens already used towards it before this run (today's, for a daily cap).
    pub used: u64,
    /// A daily cap (resets at midnight) rather than one run's.
    pub daily: bool,
}

/// Checks `budget` for a call estimated at `tokens` when the run has used `run_tokens`.
///
/// # Errors
/// [`BudgetExceeded`] when the call would pass it.
pub fn check_run(
    budget: &RunBudget,
    run_tokens: u64,
    tokens: u64,
    zone: &Zone,
    now_ms: u64,
) -> Result<(), Box<BudgetExceeded>> {
    let used = budget.used + run_tokens;
    if used + tokens <= budget.limit {
        return Ok(());
    }
    let (period, resets) = if budget.daily {
        let next = local_date(zone, now_ms).succ_opt();
        (
            "today",
            next.map(|d| format!("{d} 00:00")).unwrap_or_default(),
        )
    } else {
        ("in this run", "the next run".to_string())
    };
    Err(Box::new(BudgetExceeded {
        cap: budget.cap.clone(),
        limit: format!("{} tokens", budget.limit),
        used: format!("{used} tokens"),
        period,
        needed: format!("{tokens} tokens"),
        resets,
        zone: zone.name.clone(),
    }))
}

fn next_month(day: NaiveDate) -> Option<NaiveDate> {
    let (year, month) = if day.month() == 12 {
        (day.year() + 1, 1)
    } else {
        (day.year(), day.month() + 1)
    };
    NaiveDate::from_ymd_opt(year, month, 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::usage::{UsageRecord, append};
    use lurkbot_core::{Home, ModelPrice};

    /// 2026-11-24 12:00 UTC.
    const NOON: u64 = 1_795_521_600_000;
    const HOUR: u64 = 3_600_000;

    fn record(ts: u64, agent: &str, tokens: u64, cost: Option<f64>) -> UsageRecord {
        UsageRecord {
            ts,
            agent: agent.into(),
            session_key: format!("agent:{agent}:main"),
            model: "openai/m".into(),
            input_tokens: tokens,
            output_tokens: 0,
            cached_input_tokens: None,
            cost_usd: cost,
            estimated: false,
        }
    }

    fn home_with(records: &[UsageRecord], zone: &Zone) -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        for r in records {
            append(&home, zone, r).unwrap();
        }
        (dir, home)
    }

    #[test]
    fn a_daily_token_cap_counts_today_only_in_the_users_zone() {
        let zone = Zone::named("Asia/Tokyo").unwrap();
        // 20:00 UTC on the 23rd is 05:00 on the 24th in Tokyo: today there. 14:00 UTC on the
        // 23rd is 23:00 on the 23rd in Tokyo: yesterday.
        let (_dir, home) = home_with(
            &[
                record(NOON - 16 * HOUR, "main", 900, None),
                record(NOON - 22 * HOUR, "main", 5_000, None),
            ],
            &zone,
        );
        let mut config = Config::default();
        config.budgets.daily_tokens = Some(1_000);
        let ledger = Ledger::of(&home);
        assert!(check(&config, &ledger, &zone, NOON, "main", "openai/m", 100).is_ok());
        let e = check(&config, &ledger, &zone, NOON, "main", "openai/m", 101).unwrap_err();
        assert_eq!(e.cap, "budgets.daily_tokens");
        assert_eq!(e.used, "900 tokens");
        assert_eq!(e.resets, "2026-11-25 00:00");
        assert!(
            e.to_string()
                .starts_with("BudgetExceeded: budgets.daily_tokens is 1000 tokens")
        );
        // The next day (Tokyo) the cap is free again; the month still counts everything.
        let tomorrow = NOON + 24 * HOUR;
        assert!(check(&config, &ledger, &zone, tomorrow, "main", "openai/m", 1_000).is_ok());
        config.budgets.monthly_tokens = Some(6_000);
        let e = check(&config, &ledger, &zone, tomorrow, "main", "openai/m", 101).unwrap_err();
        assert_eq!(
            (e.cap.as_str(), e.period),
            ("budgets.monthly_tokens", "this month")
        );
        assert_eq!(e.resets, "2026-12-01 00:00");
    }

    #[test]
    fn agent_caps_and_dollar_caps() {
        let zone = Zone::utc();
        let (_dir, home) = home_with(
            &[
                record(NOON - HOUR, "work", 2_000, Some(0.40)),
                record(NOON - HOUR, "main", 10, Some(0.05)),
            ],
            &zone,
        );
        let mut config = Config::default();
        config
            .agents
            .entry("work".into())
            .or_default()
            .budgets
            .daily_tokens = Some(2_000);
        let ledger = Ledger::of(&home);
        let e = check(&config, &ledger, &zone, NOON, "work", "openai/m", 1).unwrap_err();
        assert_eq!(e.cap, "agents.work.budgets.daily_tokens");
        assert!(check(&config, &ledger, &zone, NOON, "main", "openai/m", 1).is_ok());
        // $0.45 spent in all; the call's input at $1/Mtok costs $0.10 more: over $0.50.
        config.budgets.daily_usd = Some(0.50);
        config.models.insert(
            "openai/m".into(),
            ModelPrice {
                input_per_mtok: Some(1.0),
                output_per_mtok: Some(1.0),
                cached_input_per_mtok: None,
                vision: None,
            },
        );
        assert!(check(&config, &ledger, &zone, NOON, "main", "openai/m", 40_000).is_ok());
        let e = check(&config, &ledger, &zone, NOON, "main", "openai/m", 100_000).unwrap_err();
        assert_eq!(
            (e.cap.as_str(), e.limit.as_str()),
            ("budgets.daily_usd", "$0.50")
        );
        // Records appended later (by another process) are read on the next check.
        append(&home, &zone, &record(NOON, "main", 0, Some(0.10))).unwrap();
        assert!(check(&config, &ledger, &zone, NOON, "main", "openai/m", 0).is_err());
    }
}
