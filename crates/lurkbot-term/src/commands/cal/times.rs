//! Times on the command line: RFC 3339 instants with offsets (`--from`, `--to`, `--start`,
//! `--end`) and, for all-day events, dates. All-day spans are whole UTC days, end exclusive:
//! `--start 2026-03-08 --end 2026-03-08 --all-day` is one day, `--end 2026-03-10` makes two.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, SecondsFormat, Utc};

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

/// Parses `--start`/`--end`: RFC 3339 with an offset, or `YYYY-MM-DD`.
///
/// # Errors
/// `InvalidArgs` with an example.
pub(super) fn parse_moment(flag: &str, raw: &str) -> Result<Moment, CommandError> {
    if let Ok(d) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        return Ok(Moment::Date(d));
    }
    DateTime::parse_from_rfc3339(raw)
        .map(Moment::Instant)
        .map_err(|_| bad_time(flag, raw, true))
}

/// Parses `--from`/`--to`: RFC 3339 with an offset, in ms since the epoch.
///
/// # Errors
/// `InvalidArgs` with an example.
pub(super) fn parse_instant(flag: &str, raw: &str) -> Result<i64, CommandError> {
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.timestamp_millis())
        .map_err(|_| bad_time(flag, raw, false))
}

fn bad_time(flag: &str, raw: &str, dates_too: bool) -> CommandError {
    CommandError::new(
        ErrorCode::InvalidArgs,
        format!("{flag} '{raw}' is not an RFC 3339 time with an offset"),
    )
    .with_hint(if dates_too {
        "write it like 2026-11-21T10:00:00+01:00 (or 2026-11-21 with --all-day)"
    } else {
        "write it like 2026-11-21T00:00:00+01:00 or 2026-11-21T00:00:00Z"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Moment {
        parse_moment("--start", s).unwrap()
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
    fn instants_need_offsets() {
        assert!(parse_instant("--from", "2026-11-21T00:00:00Z").is_ok());
        for bad in ["2026-11-21", "2026-11-21T00:00:00", "tomorrow"] {
            assert_eq!(
                parse_instant("--from", bad).unwrap_err().code,
                ErrorCode::InvalidArgs
            );
        }
    }
}
