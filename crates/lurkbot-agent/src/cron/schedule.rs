//! When a cron job runs (ARCHITECTURE.md §7): `at` one instant, `every` a period from an anchor,
//! or a 5/6-field `cron` expression in an IANA time zone. The next run is computed from "now"
//! given by the caller (an injected clock in tests), never read here.
//!
//! Cron expressions are evaluated by `croner` on wall-clock time in the job's zone (from the
//! system's tzdata through [`lurkbot_core::Zone`]): a run whose time the clocks skip (spring
//! forward) happens at the moment they change (02:30 → 03:00); a time the clocks repeat (fall
//! back) runs once, at its first occurrence; a day of month that a month lacks (the 31st) is
//! skipped.

use std::str::FromStr;
use std::sync::Arc;

use croner::{CivilDate, CivilDateTime, CivilTime, Cron, CronDateTime, Resolution, Weekday};
use lurkbot_core::Zone;
use serde::{Deserialize, Serialize};

/// A job's schedule, in OpenClaw's JSON shape (`{"kind": "at", "atMs": …}` …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Schedule {
    /// Once, at an instant.
    #[serde(rename_all = "camelCase")]
    At {
        /// Milliseconds since the epoch.
        at_ms: u64,
    },
    /// Every period, counted from an anchor.
    #[serde(rename_all = "camelCase")]
    Every {
        /// The period in milliseconds (at least one second).
        every_ms: u64,
        /// The first run (ms since the epoch); later ones fall on whole periods after it.
        anchor_ms: u64,
    },
    /// A cron expression in a time zone.
    #[serde(rename_all = "camelCase")]
    Cron {
        /// 5 fields (minute hour day month weekday) or 6 (with seconds first).
        expr: String,
        /// IANA zone; the system's when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tz: Option<String>,
    },
}

/// Why a schedule cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// `--at` is neither RFC 3339 nor `+<n><unit>`.
    #[error(
        "'{0}' is not a time: write RFC 3339 (2026-11-24T09:00:00+01:00) or a delay (+20m, +2h, +1d)"
    )]
    BadAt(String),
    /// `--at` lies in the past.
    #[error("'{0}' is in the past")]
    PastAt(String),
    /// `--every` is not `<n><unit>` of at least one second.
    #[error("'{0}' is not a period: write 30s, 10m, 1h or 1d")]
    BadEvery(String),
    /// The cron expression does not parse.
    #[error("'{expr}' is not a cron expression ({reason}): write 5 fields, e.g. \"0 9 * * 1-5\"")]
    BadCron {
        /// The expression.
        expr: String,
        /// The parser's reason.
        reason: String,
    },
    /// The zone is unknown.
    #[error(transparent)]
    Zone(#[from] lurkbot_core::UnknownZone),
}

/// `30s`, `10m`, `1h`, `1d` in milliseconds (at least one second).
///
/// # Errors
/// [`ScheduleError::BadEvery`].
pub fn parse_period(raw: &str) -> Result<u64, ScheduleError> {
    lurkbot_core::parse_period_ms(raw).ok_or_else(|| ScheduleError::BadEvery(raw.to_string()))
}

/// `--at`: RFC 3339, or `+<period>` from `now_ms`; never in the past.
///
/// # Errors
/// [`ScheduleError::BadAt`] or [`ScheduleError::PastAt`].
pub fn parse_at(raw: &str, now_ms: u64) -> Result<u64, ScheduleError> {
    let at = if let Some(delay) = raw.trim().strip_prefix('+') {
        now_ms.saturating_add(parse_period(delay).map_err(|_| ScheduleError::BadAt(raw.into()))?)
    } else {
        let t = chrono::DateTime::parse_from_rfc3339(raw.trim())
            .map_err(|_| ScheduleError::BadAt(raw.into()))?;
        u64::try_from(t.timestamp_millis()).map_err(|_| ScheduleError::BadAt(raw.into()))?
    };
    if at <= now_ms {
        return Err(ScheduleError::PastAt(raw.into()));
    }
    Ok(at)
}

impl Schedule {
    /// Checks the schedule (the expression parses, the zone exists, the period is positive).
    ///
    /// # Errors
    /// What is wrong.
    pub fn validate(&self) -> Result<(), ScheduleError> {
        match self {
            Self::At { .. } => Ok(()),
            Self::Every { every_ms, .. } if *every_ms < 1_000 => {
                Err(ScheduleError::BadEvery(format!("{every_ms}ms")))
            }
            Self::Every { .. } => Ok(()),
            Self::Cron { expr, tz } => {
                parse_cron(expr)?;
                Zone::of(tz.as_deref())?;
                Ok(())
            }
        }
    }

    /// The first run strictly after `after_ms`, or `None` when there is none (a past `at`).
    ///
    /// # Errors
    /// An invalid expression or zone (see [`Schedule::validate`]).
    pub fn next_after(&self, after_ms: u64) -> Result<Option<u64>, ScheduleError> {
        match self {
            Self::At { at_ms } => Ok((*at_ms > after_ms).then_some(*at_ms)),
            Self::Every {
                every_ms,
                anchor_ms,
            } => {
                let every = (*every_ms).max(1_000);
                if after_ms < *anchor_ms {
                    return Ok(Some(*anchor_ms));
                }
                let periods = (after_ms - anchor_ms) / every + 1;
                Ok(anchor_ms.checked_add(periods.saturating_mul(every)))
            }
            Self::Cron { expr, tz } => {
                let cron = parse_cron(expr)?;
                let zone = Arc::new(Zone::of(tz.as_deref())?);
                let start = Zoned {
                    zone,
                    // Whole seconds: a run at this very second is not "after".
                    utc_s: i64::try_from(after_ms / 1_000).unwrap_or(i64::MAX),
                };
                match cron.find_next_occurrence(&start, false) {
                    Ok(next) => Ok(u64::try_from(next.utc_s).ok().map(|s| s * 1_000)),
                    Err(_) => Ok(None),
                }
            }
        }
    }
}

fn parse_cron(expr: &str) -> Result<Cron, ScheduleError> {
    Cron::from_str(expr).map_err(|e| ScheduleError::BadCron {
        expr: expr.to_string(),
        reason: e.to_string(),
    })
}

/// An instant seen in a zone: what croner searches over.
#[derive(Clone)]
struct Zoned {
    zone: Arc<Zone>,
    utc_s: i64,
}

impl Zoned {
    fn wall(&self) -> chrono::NaiveDateTime {
        let offset = self.zone.offset_at(self.utc_s.saturating_mul(1_000));
        chrono::DateTime::from_timestamp(self.utc_s, 0)
            .unwrap_or_default()
            .with_timezone(&offset)
            .naive_local()
    }
}

impl CronDateTime for Zoned {
    fn to_civil(&self) -> CivilDateTime {
        use chrono::{Datelike, Timelike};
        let w = self.wall();
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(w.year(), w.month(), w.day()),
            CivilTime::from_parts_unchecked(w.hour(), w.minute(), w.second()),
        )
    }

    fn civil_weekday(&self) -> Weekday {
        use chrono::Datelike;
        Weekday::from_days_from_sunday(self.wall().weekday().num_days_from_sunday())
    }

    fn resolve_civil(
        &self,
        civil: CivilDateTime,
    ) -> Result<Resolution<Self>, croner::errors::CronError> {
        let (date, time) = (civil.date(), civil.time());
        let wall = chrono::NaiveDate::from_ymd_opt(date.year(), date.month(), date.day())
            .and_then(|d| d.and_hms_opt(time.hour(), time.minute(), time.second()))
            .ok_or(croner::errors::CronError::InvalidDate)?;
        let at = |offset: i32| Zoned {
            zone: self.zone.clone(),
            utc_s: wall.and_utc().timestamp() - i64::from(offset),
        };
        Ok(match self.zone.local_offsets(wall).as_slice() {
            [] => Resolution::Gap,
            [one] => Resolution::Single(at(*one)),
            [earlier, later, ..] => Resolution::Ambiguous(at(*earlier), at(*later)),
        })
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        Some(Self {
            zone: self.zone.clone(),
            utc_s: self.utc_s.checked_add(seconds)?,
        })
    }

    fn cmp_instant(&self, other: &Self) -> std::cmp::Ordering {
        self.utc_s.cmp(&other.utc_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(rfc3339: &str) -> u64 {
        u64::try_from(
            chrono::DateTime::parse_from_rfc3339(rfc3339)
                .unwrap()
                .timestamp_millis(),
        )
        .unwrap()
    }

    fn cron(expr: &str, tz: &str) -> Schedule {
        Schedule::Cron {
            expr: expr.into(),
            tz: Some(tz.into()),
        }
    }

    fn next(s: &Schedule, after: &str) -> Option<u64> {
        s.next_after(ms(after)).unwrap()
    }

    #[test]
    fn daily_runs_follow_the_zone_across_dst() {
        let daily = cron("0 9 * * *", "Europe/Berlin");
        // Winter: 09:00 CET is 08:00 UTC; summer: 07:00 UTC.
        assert_eq!(
            next(&daily, "2026-03-28T09:00:00+01:00"),
            Some(ms("2026-03-29T09:00:00+02:00"))
        );
        assert_eq!(
            next(&daily, "2026-11-23T10:00:00Z"),
            Some(ms("2026-11-24T08:00:00Z"))
        );
        // 02:30 does not exist on 2026-03-29 in Berlin: the run comes right after the change.
        let early = cron("30 2 * * *", "Europe/Berlin");
        let spring = next(&early, "2026-03-28T12:00:00+01:00").unwrap();
        assert_eq!(spring, ms("2026-03-29T03:00:00+02:00"));
        // 02:30 happens twice on 2026-10-25: once is enough.
        let first = next(&early, "2026-10-24T12:00:00+02:00").unwrap();
        assert_eq!(first, ms("2026-10-25T02:30:00+02:00"));
        let after_it = next(&early, "2026-10-25T02:30:00+02:00").unwrap();
        assert_eq!(
            after_it,
            ms("2026-10-26T02:30:00+01:00"),
            "no second run at 02:30 CET"
        );
    }

    #[test]
    fn month_ends_and_six_fields() {
        let last = cron("0 9 31 * *", "UTC");
        assert_eq!(
            next(&last, "2026-04-01T00:00:00Z"),
            Some(ms("2026-05-31T09:00:00Z"))
        );
        let leap = cron("0 0 29 2 *", "UTC");
        assert_eq!(
            next(&leap, "2026-03-01T00:00:00Z"),
            Some(ms("2028-02-29T00:00:00Z"))
        );
        let seconds = cron("30 * * * * *", "UTC");
        assert_eq!(
            next(&seconds, "2026-01-01T00:00:00Z"),
            Some(ms("2026-01-01T00:00:30Z"))
        );
        assert!(cron("61 * * * *", "UTC").validate().is_err());
        assert!(cron("0 9 * * *", "Mars/Olympus").validate().is_err());
    }

    #[test]
    fn at_and_every() {
        let at = Schedule::At {
            at_ms: ms("2026-11-24T10:00:00Z"),
        };
        assert_eq!(
            next(&at, "2026-11-24T09:00:00Z"),
            Some(ms("2026-11-24T10:00:00Z"))
        );
        assert_eq!(
            next(&at, "2026-11-24T10:00:00Z"),
            None,
            "a past at has no next run"
        );
        let every = Schedule::Every {
            every_ms: 3_600_000,
            anchor_ms: ms("2026-11-24T10:00:00Z"),
        };
        assert_eq!(
            next(&every, "2026-11-24T09:00:00Z"),
            Some(ms("2026-11-24T10:00:00Z"))
        );
        assert_eq!(
            next(&every, "2026-11-24T10:00:00Z"),
            Some(ms("2026-11-24T11:00:00Z"))
        );
        assert_eq!(
            next(&every, "2026-11-24T12:30:00Z"),
            Some(ms("2026-11-24T13:00:00Z"))
        );
        let now = ms("2026-11-24T10:00:00Z");
        assert_eq!(parse_at("+20m", now), Ok(now + 1_200_000));
        assert_eq!(
            parse_at("2026-11-24T11:00:00+01:00", now),
            Err(ScheduleError::PastAt("2026-11-24T11:00:00+01:00".into()))
        );
        assert!(parse_at("tomorrow", now).is_err());
        assert_eq!(parse_period("10m"), Ok(600_000));
        assert!(parse_period("0s").is_err() && parse_period("5x").is_err());
    }

    #[test]
    fn the_json_is_openclaws_shape() {
        let s = Schedule::Every {
            every_ms: 60_000,
            anchor_ms: 5,
        };
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"kind": "every", "everyMs": 60000, "anchorMs": 5})
        );
        let c: Schedule = serde_json::from_value(
            serde_json::json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Berlin"}),
        )
        .unwrap();
        assert_eq!(c, cron("0 9 * * *", "Europe/Berlin"));
        let a: Schedule =
            serde_json::from_value(serde_json::json!({"kind": "at", "atMs": 7})).unwrap();
        assert_eq!(a, Schedule::At { at_ms: 7 });
    }
}
