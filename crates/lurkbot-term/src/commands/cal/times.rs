//! Times on the command line and on screen. Accepted: RFC 3339 with an offset, a local time
//! without one (`2026-11-24T09:00`, `2026-11-24 09:00`, read in the user's zone) and, for
//! all-day events and range bounds, dates. The user's zone is `agent.timezone`, else the
//! system's (`TZ`, then `/etc/localtime`), else UTC; times are shown in it with their offset,
//! and the JSON keeps the UTC instants beside the local renderings. All-day spans are whole
//! UTC days, end exclusive: `--start 2026-03-08 --end 2026-03-08 --all-day` is one day,
//! `--end 2026-03-10` makes two.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, NaiveDateTime, SecondsFormat, Utc};

pub(crate) use lurkbot_core::Zone;

use super::model::Span;
use crate::{CommandError, ErrorCode};

/// A point given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Moment {
    /// A time with an offset.
    Instant(DateTime<FixedOffset>),
    /// A calendar date (all-day events only).
    Date(NaiveDate),
}

impl Moment {
    /// The calendar date: the date itself, or the instant's date in its own offset.
    fn date(self) -> NaiveDate {
        match self {
            Self::Instant(t) => t.date_naive(),
            Self::Date(d) => d,
        }
    }
}

/// A wall-clock time without an offset: `2026-11-24T09:00[:00]` or `2026-11-24 09:00[:00]`.
fn parse_wall(raw: &str) -> Option<NaiveDateTime> {
    [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(raw.trim(), f).ok())
}

/// A wall-clock time read in `zone`, or the error for a time the clocks skip.
fn in_zone(
    flag: &str,
    raw: &str,
    wall: NaiveDateTime,
    zone: &Zone,
) -> Result<DateTime<FixedOffset>, CommandError> {
    zone.resolve(wall).map_err(|_| {
        CommandError::new(
            ErrorCode::InvalidArgs,
            format!(
                "{flag} '{raw}' does not exist in {} (the clocks skip it)",
                zone.name
            ),
        )
        .with_hint("pick a time an hour later, or give an explicit offset")
    })
}

/// Parses `--start`/`--end`: RFC 3339 with an offset, a local time (read in `zone`), or
/// `YYYY-MM-DD`.
///
/// # Errors
/// `InvalidArgs` with an example.
pub(super) fn parse_moment(flag: &str, raw: &str, zone: &Zone) -> Result<Moment, CommandError> {
    if let Ok(d) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        return Ok(Moment::Date(d));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(Moment::Instant(t));
    }
    match parse_wall(raw) {
        Some(wall) => in_zone(flag, raw, wall, zone).map(Moment::Instant),
        None => Err(bad_time(flag, raw, true, zone)),
    }
}

/// Parses `--from`/`--to`: RFC 3339 with an offset, a local time, or a date (its local
/// midnight), in ms since the epoch.
///
/// # Errors
/// `InvalidArgs` with an example.
pub(super) fn parse_instant(flag: &str, raw: &str, zone: &Zone) -> Result<i64, CommandError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(t.timestamp_millis());
    }
    let wall = parse_wall(raw).or_else(|| {
        NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
    });
    match wall {
        Some(wall) => in_zone(flag, raw, wall, zone).map(|t| t.timestamp_millis()),
        None => Err(bad_time(flag, raw, false, zone)),
    }
}

fn bad_time(flag: &str, raw: &str, dates_too: bool, zone: &Zone) -> CommandError {
    CommandError::new(
        ErrorCode::InvalidArgs,
        format!("{flag} '{raw}' is not a time"),
    )
    .with_hint(if dates_too {
        format!(
            "write it like 2026-11-21T10:00 ({}), 2026-11-21T10:00:00+01:00, or 2026-11-21 with --all-day",
            zone.name
        )
    } else {
        format!(
            "write it like 2026-11-21 or 2026-11-21T10:00 ({}), or 2026-11-21T10:00:00+01:00",
            zone.name
        )
    })
}

/// Builds a span from a start and end.
///
/// # Errors
/// `InvalidArgs` when the end is before the start, or a date is given for a timed event.
pub(super) fn span(start: Moment, end: Moment, all_day: bool) -> Result<Span, CommandError> {
    if all_day {
        let first = start.date();
        let mut after = end.date();
        if after == first {
            after = first + Duration::days(1);
        }
        if after < first {
            return Err(CommandError::new(
                ErrorCode::InvalidArgs,
                format!("--end {after} is before --start {first}"),
            ));
        }
        return Ok(Span {
            start_ms: midnight_ms(first),
            end_ms: midnight_ms(after),
            all_day: true,
        });
    }
    let (Moment::Instant(s), Moment::Instant(e)) = (start, end) else {
        return Err(CommandError::new(
            ErrorCode::InvalidArgs,
            "a date without a time needs --all-day",
        )
        .with_hint("add --all-day, or give times like 2026-11-21T10:00:00+01:00"));
    };
    if e < s {
        return Err(CommandError::new(
            ErrorCode::InvalidArgs,
            format!("--end {e} is before --start {s}"),
        ));
    }
    Ok(Span {
        start_ms: s.timestamp_millis(),
        end_ms: e.timestamp_millis(),
        all_day: false,
    })
}

/// Turns a span into whole days (for `--all-day true` without new times): the UTC day of the
/// start through the UTC day holding the last moment of the end.
pub(super) fn to_all_day(span: Span) -> Span {
    let first = utc_date(span.start_ms);
    let last = utc_date((span.end_ms - 1).max(span.start_ms));
    Span {
        start_ms: midnight_ms(first),
        end_ms: midnight_ms(last + Duration::days(1)),
        all_day: true,
    }
}

/// UTC midnight at the start of `date`, in ms.
pub(super) fn midnight_ms(date: NaiveDate) -> i64 {
    date.and_hms_opt(0, 0, 0)
        .map_or(0, |t| t.and_utc().timestamp_millis())
}

/// The UTC date of `ms`.
pub(super) fn utc_date(ms: i64) -> NaiveDate {
    DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .date_naive()
}

/// Readable form: RFC 3339 in UTC, or for all-day events the date (for an exclusive `end`, the
/// last day covered).
pub(super) fn show(ms: i64, all_day: bool, is_end: bool) -> String {
    if all_day {
        let date = utc_date(if is_end { ms - 1 } else { ms });
        return date.format("%Y-%m-%d").to_string();
    }
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Readable form in `zone`: RFC 3339 with the zone's offset, or for all-day events the date.
pub(super) fn show_in(zone: &Zone, ms: i64, all_day: bool, is_end: bool) -> String {
    if all_day {
        return show(ms, true, is_end);
    }
    zone.show(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Moment {
        parse_moment("--start", s, &Zone::utc()).unwrap()
    }

    #[test]
    fn timed_spans_keep_their_instants_across_dst() {
        // New York springs forward on 2026-03-08: 01:30 EST to 03:30 EDT is one hour.
        let s = span(
            m("2026-03-08T01:30:00-05:00"),
            m("2026-03-08T03:30:00-04:00"),
            false,
        )
        .unwrap();
        assert_eq!(s.end_ms - s.start_ms, 3_600_000);
        assert!(span(m("2026-03-08T03:00:00Z"), m("2026-03-08T02:00:00Z"), false).is_err());
        assert!(span(m("2026-03-08"), m("2026-03-09"), false).is_err());
    }

    #[test]
    fn all_day_spans_are_whole_utc_days() {
        let one = span(m("2026-03-08"), m("2026-03-08"), true).unwrap();
        assert_eq!(one.end_ms - one.start_ms, 86_400_000);
        assert_eq!(show(one.start_ms, true, false), "2026-03-08");
        assert_eq!(show(one.end_ms, true, true), "2026-03-08");
        let two = span(m("2026-03-08T22:00:00-05:00"), m("2026-03-10"), true).unwrap();
        assert_eq!(two.end_ms - two.start_ms, 2 * 86_400_000);
        assert!(span(m("2026-03-08"), m("2026-03-07"), true).is_err());
        let whole = to_all_day(Span {
            start_ms: one.start_ms + 3_600_000,
            end_ms: one.start_ms + 7_200_000,
            all_day: false,
        });
        assert_eq!(whole, one);
    }

    #[test]
    fn local_times_are_read_in_the_users_zone() {
        let berlin = Zone::of(Some("Europe/Berlin")).unwrap();
        let utc = Zone::utc();
        let at = |raw: &str, zone: &Zone| parse_instant("--from", raw, zone).unwrap();
        assert_eq!(
            at("2026-11-24T09:00", &berlin),
            at("2026-11-24T08:00:00Z", &utc)
        );
        assert_eq!(
            at("2026-07-01 09:00", &berlin),
            at("2026-07-01T07:00:00Z", &utc)
        );
        assert_eq!(at("2026-11-24", &berlin), at("2026-11-23T23:00:00Z", &utc));
        assert_eq!(
            berlin.show(at("2026-11-24T08:00:00Z", &utc)),
            "2026-11-24T09:00:00+01:00"
        );
        // 02:30 on 2026-03-29 does not exist in Berlin; 02:30 on 2026-10-25 happens twice
        // (the earlier one, still summer time, is meant).
        let gap = parse_instant("--from", "2026-03-29T02:30", &berlin).unwrap_err();
        assert!(
            gap.message.contains("does not exist in Europe/Berlin"),
            "{}",
            gap.message
        );
        assert_eq!(
            at("2026-10-25T02:30", &berlin),
            at("2026-10-25T00:30:00Z", &utc)
        );
        for bad in ["tomorrow", "2026-13-01", "09:00"] {
            assert_eq!(
                parse_instant("--from", bad, &berlin).unwrap_err().code,
                ErrorCode::InvalidArgs
            );
        }
    }
}
