//! `[heartbeat]`, `[cron]` and `[agent.subagents]`: the settings of the autonomy layer (ARCHITECTURE.md §7),
//! and the period syntax (`30s`, `10m`, `1h`, `1d`) cron jobs and the heartbeat share.

use serde::{Deserialize, Serialize};

/// `[heartbeat]`: the periodic check of `workspace/HEARTBEAT.md`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct HeartbeatConfig {
    /// Whether the gateway runs it (default true; without HEARTBEAT.md it never calls a model).
    pub enabled: bool,
    /// How often: `30s`, `5m` (default), `1h`.
    pub every: String,
    /// When it may run; outside the window it is skipped as `quiet-hours`.
    pub active_hours: ActiveHours,
    /// Where an alert goes: `last` (default: where the owner last talked), `none`, `webchat`,
    /// `irc`, or a channel (`telegram`: the chat the owner last wrote from there).
    pub target: String,
    /// The prompt instead of the built-in one (HEARTBEAT.md's text follows it).
    pub prompt: Option<String>,
    /// Most tokens the heartbeat's turns may use in a day (unset: no cap beyond `[budgets]`).
    pub budget_tokens: Option<u64>,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            every: "5m".into(),
            active_hours: ActiveHours::default(),
            target: "last".into(),
            prompt: None,
            budget_tokens: None,
        }
    }
}

/// `[cron]`: the scheduler's settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct CronConfig {
    /// A job that fell due while the gateway was down: `one` (default) runs it once at start,
    /// however many times it was missed; `none` skips what was missed and waits for the next
    /// time (the skip is logged in the job's runs).
    pub catch_up: CatchUp,
}

/// What happens to cron runs missed while the gateway was down.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum CatchUp {
    /// Run once at start.
    #[default]
    One,
    /// Skip to the next scheduled time.
    None,
}

/// `[heartbeat.active_hours]`: a daily window; `start` after `end` crosses midnight; both
/// empty (default) means always.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ActiveHours {
    /// `HH:MM`.
    pub start: String,
    /// `HH:MM`, or `24:00`.
    pub end: String,
    /// IANA zone of the window; default `agent.timezone`, else the system's.
    pub tz: Option<String>,
}

impl ActiveHours {
    /// The window as minutes after midnight, `None` when it is unset (always active).
    ///
    /// # Errors
    /// A time that is not `HH:MM`, or only one end set.
    pub fn minutes(&self) -> Result<Option<(u32, u32)>, String> {
        match (self.start.trim(), self.end.trim()) {
            ("", "") => Ok(None),
            ("", _) | (_, "") => {
                Err("set both heartbeat.active_hours.start and .end (HH:MM), or neither".into())
            }
            (start, end) => Ok(Some((hh_mm(start)?, hh_mm(end)?))),
        }
    }
}

/// Whether `minute` (after local midnight) lies in the window `(start, end)`; a window whose
/// start is after its end crosses midnight; equal ends mean all day.
pub fn within_window((start, end): (u32, u32), minute: u32) -> bool {
    match start.cmp(&end) {
        std::cmp::Ordering::Less => minute >= start && minute < end,
        std::cmp::Ordering::Greater => minute >= start || minute < end,
        std::cmp::Ordering::Equal => true,
    }
}

fn hh_mm(raw: &str) -> Result<u32, String> {
    let bad = || format!("'{raw}' is not a time of day: write HH:MM, e.g. 08:00 or 22:30");
    let (h, m) = raw.split_once(':').ok_or_else(bad)?;
    let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if (h, m) == (24, 0) {
        return Ok(24 * 60);
    }
    if h > 23 || m > 59 || raw.len() != 5 {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

/// `[agent.subagents]`: limits of `sessions_spawn`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct SubagentsConfig {
    /// How deep sub-agents may nest: 1 (default) means sub-agents cannot spawn; at most 5.
    pub max_depth: u32,
    /// Sub-agents one session may run at once (default 5, at most 5).
    pub max_children: usize,
    /// Default `runTimeoutSeconds` of a spawn (3,600).
    pub run_timeout_seconds: u64,
    /// Default `runBudgetTokens` of a spawn: most tokens one sub-agent run may use (unset: no
    /// cap beyond `[budgets]`).
    pub run_budget_tokens: Option<u64>,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        Self {
            max_depth: 1,
            max_children: 5,
            run_timeout_seconds: 3600,
            run_budget_tokens: None,
        }
    }
}

/// `30s`, `10m`, `1h`, `1d` in milliseconds (at least one second); `None` when malformed.
pub fn parse_period_ms(raw: &str) -> Option<u64> {
    let raw = raw.trim();
    let split = raw.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = raw.split_at(split);
    let n: u64 = number.parse().ok()?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(unit_ms).filter(|ms| *ms >= 1_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_periods() {
        let night = ActiveHours {
            start: "22:00".into(),
            end: "06:30".into(),
            tz: None,
        };
        let w = night.minutes().expect("valid").expect("set");
        assert!(within_window(w, 23 * 60) && within_window(w, 6 * 60 + 29));
        assert!(!within_window(w, 6 * 60 + 30) && !within_window(w, 12 * 60));
        let day = (8 * 60, 24 * 60);
        assert!(within_window(day, 23 * 60 + 59) && !within_window(day, 7 * 60));
        assert_eq!(ActiveHours::default().minutes(), Ok(None));
        for bad in ["8:00", "25:00", "12:60", "noon"] {
            let hours = ActiveHours {
                start: bad.into(),
                end: "10:00".into(),
                tz: None,
            };
            assert!(hours.minutes().is_err(), "{bad}");
        }
        assert_eq!(parse_period_ms("5m"), Some(300_000));
        assert_eq!(parse_period_ms("0s"), None);
        assert_eq!(parse_period_ms("5 m"), None);
    }

    #[test]
    fn config_check_names_each_bad_autonomy_setting() {
        let text = "[heartbeat]\nevery = \"often\"\ntarget = \"fax\"\n\
                    [heartbeat.active_hours]\nstart = \"08:00\"\ntz = \"Mars/Base\"\n\
                    [agent.subagents]\nmax_depth = 9\nmax_children = 0\n";
        let (_, problems) =
            crate::Config::check(std::path::Path::new("c.toml"), text).expect("parses");
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        for key in [
            "heartbeat.every",
            "heartbeat.target",
            "heartbeat.active_hours",
            "heartbeat.active_hours.tz",
            "agent.subagents.max_depth",
            "agent.subagents.max_children",
        ] {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
        let (_, none) = crate::Config::check(
            std::path::Path::new("c.toml"),
            "[heartbeat]\nevery = \"10m\"\n",
        )
        .expect("parses");
        assert!(none.is_empty(), "{none:?}");
    }
}
