//! Time zones from the system's database (tzdata) through tz-rs: the user's zone
//! (`agent.timezone`, else `TZ`, else `/etc/localtime`, else UTC), offsets at an instant, and
//! wall-clock times resolved across DST gaps and overlaps. `cal` shows and reads times with it.

use chrono::{DateTime, FixedOffset, NaiveDateTime, Offset, SecondsFormat, TimeZone, Utc};

/// A zone name this system does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not a time zone this system knows; use an IANA name such as Europe/Berlin (the tzdata package provides them)"
)]
pub struct UnknownZone(pub String);

/// The user's time zone.
#[derive(Debug, Clone)]
pub struct Zone {
    /// Its name (`Europe/Berlin`, `UTC`).
    pub name: String,
    rules: Option<tz::TimeZone>,
}

impl Zone {
    /// UTC.
    pub fn utc() -> Self {
        Self {
            name: "UTC".into(),
            rules: None,
        }
    }

    /// The system's zone with this IANA name, if it knows one.
    pub fn named(name: &str) -> Option<Self> {
        iana_zone(name).map(|rules| Self {
            name: name.to_string(),
            rules: Some(rules),
        })
    }

    /// `agent.timezone`, else the system's zone, else UTC.
    ///
    /// # Errors
    /// [`UnknownZone`] when `configured` names no zone this system knows.
    pub fn of(configured: Option<&str>) -> Result<Self, UnknownZone> {
        if let Some(name) = configured.map(str::trim).filter(|n| !n.is_empty()) {
            return Self::named(name).ok_or_else(|| UnknownZone(name.to_string()));
        }
        if let Ok(tz) = std::env::var("TZ") {
            let name = tz.trim().trim_start_matches(':');
            if !name.is_empty() {
                let rules = iana_zone(name).or_else(|| tz::TimeZone::from_posix_tz(name).ok());
                return Ok(match rules {
                    Some(rules) => Self {
                        name: name.to_string(),
                        rules: Some(rules),
                    },
                    None => Self::utc(),
                });
            }
        }
        match tz::TimeZone::local() {
            Ok(rules) => {
                let name = std::fs::read_link("/etc/localtime")
                    .ok()
                    .and_then(|p| {
                        let p = p.to_string_lossy().into_owned();
                        p.split_once("zoneinfo/").map(|(_, n)| n.to_string())
                    })
                    .unwrap_or_else(|| "local".into());
                Ok(Self {
                    name,
                    rules: Some(rules),
                })
            }
            Err(_) => Ok(Self::utc()),
        }
    }

    /// The offset from UTC in force at `ms`.
    pub fn offset_at(&self, ms: i64) -> FixedOffset {
        let seconds = self
            .rules
            .as_ref()
            .and_then(|r| r.find_local_time_type(ms.div_euclid(1000)).ok())
            .map_or(0, |t| t.ut_offset());
        FixedOffset::east_opt(seconds).unwrap_or(Utc.fix())
    }

    /// The instant a wall-clock time in this zone stands for (the earlier one when the clocks
    /// go back); `Err` with the offset before the gap when the clocks skip it.
    pub fn resolve(&self, wall: NaiveDateTime) -> Result<DateTime<FixedOffset>, i64> {
        let Some(&offset) = self.local_offsets(wall).first() else {
            // A gap: the offset in force a day before it.
            let before = wall.and_utc().timestamp_millis() - 86_400_000;
            return Err(i64::from(self.offset_at(before).local_minus_utc()));
        };
        let fixed = FixedOffset::east_opt(offset).ok_or(0)?;
        fixed.from_local_datetime(&wall).single().ok_or(0)
    }

    /// Every offset (seconds east of UTC) a wall-clock time can have here: one, two in an
    /// overlap (the earlier instant first), none in a gap.
    pub fn local_offsets(&self, wall: NaiveDateTime) -> Vec<i32> {
        let Some(rules) = &self.rules else {
            return vec![0];
        };
        let wall_s = wall.and_utc().timestamp();
        let offset_at = |t: i64| {
            rules
                .find_local_time_type(t)
                .ok()
                .map(|l| i64::from(l.ut_offset()))
        };
        let mut found: Vec<i64> = [offset_at(wall_s - 86_400), offset_at(wall_s + 86_400)]
            .into_iter()
            .flatten()
            .filter(|offset| offset_at(wall_s - offset) == Some(*offset))
            .collect();
        // The earlier instant is the one with the larger offset.
        found.sort_by(|a, b| b.cmp(a));
        found.dedup();
        found
            .into_iter()
            .filter_map(|o| i32::try_from(o).ok())
            .collect()
    }

    /// `ms` as RFC 3339 in this zone (with its offset).
    pub fn show(&self, ms: i64) -> String {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .unwrap_or_default()
            .with_timezone(&self.offset_at(ms))
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

/// The system's zone named by an IANA name (also behind a vendor prefix). Only names made of
/// the characters IANA uses are looked up, so a name can never reach another file.
fn iana_zone(name: &str) -> Option<tz::TimeZone> {
    let mut rest = name.trim();
    loop {
        let plausible = !rest.is_empty()
            && !rest.starts_with('/')
            && !rest.contains("..")
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/_-+".contains(&b));
        if plausible && let Ok(zone) = tz::TimeZone::from_posix_tz(rest) {
            return Some(zone);
        }
        rest = &rest[rest.find('/')? + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M").unwrap()
    }

    #[test]
    fn gaps_and_overlaps_are_told_apart() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        assert_eq!(berlin.local_offsets(wall("2026-11-24T09:00")), [3600]);
        assert_eq!(
            berlin.local_offsets(wall("2026-03-29T02:30")),
            Vec::<i32>::new()
        );
        assert_eq!(berlin.local_offsets(wall("2026-10-25T02:30")), [7200, 3600]);
        assert!(berlin.resolve(wall("2026-03-29T02:30")).is_err());
        assert_eq!(
            berlin
                .resolve(wall("2026-10-25T02:30"))
                .unwrap()
                .offset()
                .local_minus_utc(),
            7200
        );
        assert_eq!(Zone::utc().local_offsets(wall("2026-03-29T02:30")), [0]);
        assert!(Zone::of(Some("Mars/Olympus")).is_err());
        assert!(Zone::of(Some("../../etc/passwd")).is_err());
        assert_eq!(
            Zone::of(Some("Europe/Berlin")).unwrap().name,
            "Europe/Berlin"
        );
    }
}
