//! Reading events out of iCalendar objects a CalDAV server holds (written by any client).
//! Only what the calendar model carries is read: UID, SUMMARY, DTSTART/DTEND/DURATION, LOCATION,
//! RRULE and the VALARM triggers. DESCRIPTION, ATTENDEE, URL and the rest are never read, so
//! they cannot leak into an answer.
//!
//! Times: `…Z` is UTC; `TZID=` is looked up in the system's IANA time zone database
//! (`/usr/share/zoneinfo`, Debian's `tzdata`; Mozilla-style prefixes such as
//! `/mozilla.org/…/Europe/Berlin` are stripped). Embedding the database would cost ~1.8 MiB of
//! binary. An unknown TZID (or a machine without tzdata) falls back to the object's own
//! VTIMEZONE standard offset, then to UTC; floating times are read as UTC. A local time that
//! falls into a DST gap is read with the offset before the gap (02:30 becomes 03:30 summer
//! time); an ambiguous one takes the earlier instant.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, TimeZone, Utc};
use icalendar::parser::{Component, Property, read_calendar, unfold};

use super::model::Span;
use super::times::Zone;

/// One VEVENT (a whole event, or one occurrence of a recurring one as the server expanded it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Instance {
    /// UID.
    pub(super) uid: String,
    /// SUMMARY (empty when missing).
    pub(super) title: String,
    /// When.
    pub(super) span: Span,
    /// LOCATION.
    pub(super) location: Option<String>,
    /// Minutes before the start of each VALARM.
    pub(super) reminders: Vec<i64>,
    /// RRULE, for a recurring master.
    pub(super) rrule: Option<String>,
    /// Whether this is one occurrence (RECURRENCE-ID) rather than the master.
    pub(super) occurrence: bool,
}

impl Instance {
    /// Whether the event repeats.
    pub(super) fn recurring(&self) -> bool {
        self.occurrence || self.rrule.is_some()
    }
}

/// Every VEVENT of an object, in order.
///
/// # Errors
/// A readable message when the text is not iCalendar or a VEVENT lacks a usable DTSTART.
pub(super) fn instances(ics: &str) -> Result<Vec<Instance>, String> {
    let unfolded = unfold(&ics.replace("\r\n", "\n"));
    let calendar = read_calendar(&unfolded).map_err(|e| first_line(&e))?;
    let zones: Vec<&Component<'_>> = calendar
        .components
        .iter()
        .filter(|c| c.name.as_str().eq_ignore_ascii_case("VTIMEZONE"))
        .collect();
    calendar
        .components
        .iter()
        .filter(|c| c.name.as_str().eq_ignore_ascii_case("VEVENT"))
        .map(|event| read_event(event, &zones))
        .collect()
}

/// The master VEVENT (the one without RECURRENCE-ID, else the first).
///
/// # Errors
/// As [`instances`], or when the object holds no VEVENT.
pub(super) fn master(ics: &str) -> Result<Instance, String> {
    let all = instances(ics)?;
    let pick = all.iter().position(|i| !i.occurrence).unwrap_or_default();
    all.into_iter()
        .nth(pick)
        .ok_or_else(|| "the object holds no VEVENT".to_string())
}

fn read_event(event: &Component<'_>, zones: &[&Component<'_>]) -> Result<Instance, String> {
    let text = |name: &str| event.find_prop(name).map(|p| p.val.as_str().to_string());
    let start_prop = event
        .find_prop("DTSTART")
        .ok_or_else(|| "a VEVENT has no DTSTART".to_string())?;
    let (start_ms, all_day) = moment(start_prop, zones)?;
    let end_ms = match (event.find_prop("DTEND"), event.find_prop("DURATION")) {
        (Some(end), _) => moment(end, zones)?.0,
        (None, Some(duration)) => start_ms.saturating_add(
            duration_ms(duration.val.as_str())
                .ok_or_else(|| format!("unreadable DURATION '{}'", duration.val.as_str()))?,
        ),
        (None, None) if all_day => start_ms.saturating_add(DAY_MS),
        (None, None) => start_ms,
    };
    let reminders = event
        .components
        .iter()
        .filter(|c| c.name.as_str().eq_ignore_ascii_case("VALARM"))
        .filter_map(|alarm| alarm_minutes(alarm, start_ms, end_ms, zones))
        .collect();
    Ok(Instance {
        uid: text("UID").unwrap_or_default(),
        title: text("SUMMARY").unwrap_or_default(),
        span: Span {
            start_ms,
            end_ms: end_ms.max(start_ms),
            all_day,
        },
        location: text("LOCATION").filter(|l| !l.trim().is_empty()),
        reminders,
        rrule: text("RRULE"),
        occurrence: event.find_prop("RECURRENCE-ID").is_some(),
    })
}

const DAY_MS: i64 = 86_400_000;

fn param<'p>(prop: &'p Property<'_>, key: &str) -> Option<&'p str> {
    prop.params
        .iter()
        .find(|p| p.key.as_str().eq_ignore_ascii_case(key))
        .and_then(|p| p.val.as_ref())
        .map(|v| v.as_str().trim_matches('"'))
}

/// A DATE or DATE-TIME property as (ms since the epoch, is a date).
fn moment(prop: &Property<'_>, zones: &[&Component<'_>]) -> Result<(i64, bool), String> {
    let raw = prop.val.as_str().trim();
    let bad = || format!("unreadable {} '{raw}'", prop.name.as_str());
    let is_date = param(prop, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("DATE"))
        || (raw.len() == 8 && raw.bytes().all(|b| b.is_ascii_digit()));
    if is_date {
        let date = NaiveDate::parse_from_str(raw, "%Y%m%d").map_err(|_| bad())?;
        return Ok((
            date.and_time(chrono::NaiveTime::MIN)
                .and_utc()
                .timestamp_millis(),
            true,
        ));
    }
    if let Some(utc) = raw.strip_suffix('Z').or_else(|| raw.strip_suffix('z')) {
        let naive = NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S").map_err(|_| bad())?;
        return Ok((naive.and_utc().timestamp_millis(), false));
    }
    let naive = NaiveDateTime::parse_from_str(raw, "%Y%m%dT%H%M%S").map_err(|_| bad())?;
    Ok((local_ms(naive, param(prop, "TZID"), zones), false))
}

/// A wall-clock time in a TZID as ms since the epoch.
fn local_ms(naive: NaiveDateTime, tzid: Option<&str>, zones: &[&Component<'_>]) -> i64 {
    let Some(tzid) = tzid else {
        return naive.and_utc().timestamp_millis();
    };
    let wall = naive.and_utc().timestamp();
    if let Some(zone) = Zone::named(tzid) {
        return match zone.resolve(naive) {
            Ok(t) => t.timestamp_millis(),
            // The time falls into a gap; read it with the offset before the gap.
            Err(before) => (wall - before).saturating_mul(1000),
        };
    }
    if let Some(offset) = vtimezone_offset(tzid, zones)
        && let Some(t) = offset.from_local_datetime(&naive).earliest()
    {
        return t.timestamp_millis();
    }
    wall.saturating_mul(1000)
}

/// The standard-time offset an object's own VTIMEZONE gives a TZID.
fn vtimezone_offset(tzid: &str, zones: &[&Component<'_>]) -> Option<FixedOffset> {
    let zone = zones
        .iter()
        .find(|z| z.find_prop("TZID").is_some_and(|p| p.val.as_str() == tzid))?;
    let part = zone
        .components
        .iter()
        .find(|c| c.name.as_str().eq_ignore_ascii_case("STANDARD"))
        .or_else(|| zone.components.first())?;
    let raw = part
        .find_prop("TZOFFSETTO")?
        .val
        .as_str()
        .trim()
        .to_string();
    let sign = if raw.starts_with('-') { -1 } else { 1 };
    let digits = raw.trim_start_matches(['+', '-']);
    let hours: i32 = digits.get(0..2)?.parse().ok()?;
    let minutes: i32 = digits.get(2..4)?.parse().ok()?;
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

/// Minutes before the start at which an alarm fires.
fn alarm_minutes(
    alarm: &Component<'_>,
    start_ms: i64,
    end_ms: i64,
    zones: &[&Component<'_>],
) -> Option<i64> {
    let trigger = alarm.find_prop("TRIGGER")?;
    let fires_ms = if param(trigger, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("DATE-TIME")) {
        moment(trigger, zones).ok()?.0
    } else {
        let anchor = if param(trigger, "RELATED").is_some_and(|v| v.eq_ignore_ascii_case("END")) {
            end_ms
        } else {
            start_ms
        };
        anchor.saturating_add(duration_ms(trigger.val.as_str())?)
    };
    Some((start_ms - fires_ms).div_euclid(60_000))
}

/// An RFC 5545 duration (`-PT15M`, `P1D`, `P1W`, `-P1DT2H30M`) in ms.
pub(super) fn duration_ms(raw: &str) -> Option<i64> {
    let raw = raw.trim();
    let (sign, rest) = match raw.as_bytes().first()? {
        b'-' => (-1, &raw[1..]),
        b'+' => (1, &raw[1..]),
        _ => (1, raw),
    };
    let rest = rest.strip_prefix(['P', 'p'])?;
    let mut total: i64 = 0;
    let mut number = String::new();
    let mut in_time = false;
    let mut any = false;
    let mut time_units = 0;
    for c in rest.chars() {
        match c.to_ascii_uppercase() {
            d if d.is_ascii_digit() => number.push(d),
            'T' if number.is_empty() => in_time = true,
            unit => {
                let n: i64 = number.parse().ok()?;
                number.clear();
                let ms = match (unit, in_time) {
                    ('W', false) => 7 * DAY_MS,
                    ('D', false) => DAY_MS,
                    ('H', true) => 3_600_000,
                    ('M', true) => 60_000,
                    ('S', true) => 1000,
                    _ => return None,
                };
                total = total.checked_add(n.checked_mul(ms)?)?;
                any = true;
                time_units += usize::from(in_time);
            }
        }
    }
    (any && number.is_empty() && (!in_time || time_units > 0)).then_some(sign * total)
}

fn first_line(e: &str) -> String {
    let line = e.lines().find(|l| !l.trim().is_empty()).unwrap_or(e);
    format!("not iCalendar: {}", line.trim())
}

/// `YYYYMMDDTHHMMSSZ` for a UTC instant.
pub(super) fn utc_stamp(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y%m%dT%H%M%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .timestamp_millis()
    }

    const OTHER_CLIENT: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//x//EN\r\nBEGIN:VEVENT\r\nUID:u1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=/mozilla.org/20050126_1/Europe/Berlin:20261120T090000\r\nDURATION:PT1H30M\r\nSUMMARY:Dentist\\, Dr. B\r\nLOCATION:Main St\r\nDESCRIPTION:private\r\nATTENDEE;CN=\"Doe, J\":mailto:j@x.org\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER:-PT15M\r\nEND:VALARM\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER;RELATED=END:-P1D\r\nEND:VALARM\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER;VALUE=DATE-TIME:20261120T060000Z\r\nEND:VALARM\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    #[test]
    fn reads_what_another_client_wrote() {
        let event = master(OTHER_CLIENT).unwrap();
        assert_eq!(event.uid, "u1");
        assert_eq!(event.title, "Dentist, Dr. B");
        assert_eq!(event.location.as_deref(), Some("Main St"));
        assert_eq!(event.span.start_ms, ms("2026-11-20T08:00:00Z"));
        assert_eq!(event.span.end_ms, ms("2026-11-20T09:30:00Z"));
        assert!(!event.span.all_day && !event.recurring());
        // 15 min before start; 1 day before the end = 22.5 h before the start; 06:00Z = 2 h.
        assert_eq!(event.reminders, vec![15, 1350, 120]);
    }

    #[test]
    fn dates_zones_gaps_and_fallbacks() {
        let one = |lines: &str| {
            master(&format!(
                "BEGIN:VCALENDAR\nBEGIN:VTIMEZONE\nTZID:Custom\nBEGIN:STANDARD\nTZOFFSETTO:-0330\nEND:STANDARD\nEND:VTIMEZONE\nBEGIN:VEVENT\nUID:x\n{lines}\nEND:VEVENT\nEND:VCALENDAR\n"
            ))
            .unwrap()
            .span
        };
        let all_day = one("DTSTART;VALUE=DATE:20261121");
        assert!(all_day.all_day);
        assert_eq!(all_day.start_ms, ms("2026-11-21T00:00:00Z"));
        assert_eq!(all_day.end_ms, ms("2026-11-22T00:00:00Z"));
        // 02:30 on 2026-03-29 does not exist in Berlin: moves to 03:30 CEST = 01:30Z.
        let gap = one("DTSTART;TZID=Europe/Berlin:20260329T023000");
        assert_eq!(gap.start_ms, ms("2026-03-29T01:30:00Z"));
        // 02:30 on 2026-10-25 happens twice: the earlier (CEST) one.
        let twice = one("DTSTART;TZID=Europe/Berlin:20261025T023000");
        assert_eq!(twice.start_ms, ms("2026-10-25T00:30:00Z"));
        let custom = one("DTSTART;TZID=Custom:20261121T100000");
        assert_eq!(custom.start_ms, ms("2026-11-21T13:30:00Z"));
        let escape = one("DTSTART;TZID=../../../etc/passwd:20261121T100000");
        assert_eq!(escape.start_ms, ms("2026-11-21T10:00:00Z"));
        let tokyo = one("DTSTART;TZID=Asia/Tokyo:20261121T100000");
        assert_eq!(tokyo.start_ms, ms("2026-11-21T01:00:00Z"));
        let floating = one("DTSTART:20261121T100000\nDTEND:20261121T110000");
        assert_eq!(floating.start_ms, ms("2026-11-21T10:00:00Z"));
        assert_eq!(floating.end_ms, ms("2026-11-21T11:00:00Z"));
    }

    #[test]
    fn broken_objects_are_errors() {
        assert!(instances("not a calendar").is_err());
        assert!(master("BEGIN:VCALENDAR\nEND:VCALENDAR\n").is_err());
        let no_start = "BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:x\nEND:VEVENT\nEND:VCALENDAR\n";
        assert!(instances(no_start).unwrap_err().contains("DTSTART"));
        let bad_start =
            "BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:x\nDTSTART:tomorrow\nEND:VEVENT\nEND:VCALENDAR\n";
        assert!(instances(bad_start).unwrap_err().contains("tomorrow"));
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ms("-PT15M"), Some(-900_000));
        assert_eq!(duration_ms("P1W"), Some(7 * DAY_MS));
        assert_eq!(duration_ms("-P1DT2H30M"), Some(-(DAY_MS + 9_000_000)));
        assert_eq!(duration_ms("PT0S"), Some(0));
        for bad in ["", "P", "PT", "15M", "P1H", "PT1D", "P1DT", "P-1D"] {
            assert_eq!(duration_ms(bad), None, "{bad}");
        }
    }
}
