//! Changing an iCalendar object another client may have written, line by line, so that
//! everything LurkBot does not change (descriptions, attendees with their quoted parameters,
//! custom properties, other components) goes back to the server exactly as it came.
//! A parse-and-print round trip is not used because it would unescape text and drop parameter
//! quotes (`CN="Doe, John"` would become two parameters).
//!
//! Only the master VEVENT (the one without RECURRENCE-ID) is changed; a change of time on a
//! recurring event therefore moves the whole series.

use chrono::Duration;

use super::ical::utc_stamp;
use super::model::Span;
use super::times::utc_date;

/// What to change.
#[derive(Debug, Default)]
pub(super) struct Changes<'a> {
    /// New SUMMARY.
    pub(super) title: Option<&'a str>,
    /// New LOCATION (`Some(None)` removes it).
    pub(super) location: Option<Option<&'a str>>,
    /// New DTSTART/DTEND (DURATION is dropped).
    pub(super) span: Option<Span>,
    /// A VALARM to add: minutes before the start, and the text it shows.
    pub(super) alarm: Option<(i64, &'a str)>,
}

/// The object with `changes` applied, CRLF line endings, lines folded at 75 octets.
///
/// # Errors
/// When the object holds no VEVENT.
pub(super) fn apply(ics: &str, changes: &Changes<'_>, now_ms: i64) -> Result<String, String> {
    let mut lines = unfold(ics);
    let (begin, end) = master_range(&lines).ok_or("the object holds no VEVENT")?;
    let own = own_lines(&lines, begin, end);
    let mut removed = Vec::new();
    let mut replace = |name: &str, value: Option<String>, lines: &mut Vec<String>| {
        let found = own.iter().find(|&&i| prop_name(&lines[i]) == name).copied();
        match (found, value) {
            (Some(i), Some(v)) => lines[i] = v,
            (Some(i), None) => removed.push(i),
            (None, Some(v)) => return Some(v),
            (None, None) => {}
        }
        None
    };
    let mut added: Vec<String> = Vec::new();
    if let Some(title) = changes.title {
        added.extend(replace(
            "SUMMARY",
            Some(format!("SUMMARY:{}", escape(title))),
            &mut lines,
        ));
    }
    if let Some(location) = changes.location {
        let line = location.map(|l| format!("LOCATION:{}", escape(l)));
        added.extend(replace("LOCATION", line, &mut lines));
    }
    if let Some(span) = changes.span {
        let (start, end) = time_lines(span);
        added.extend(replace("DTSTART", Some(start), &mut lines));
        added.extend(replace("DTEND", Some(end), &mut lines));
        replace("DURATION", None, &mut lines);
    }
    let stamp = utc_stamp(now_ms);
    added.extend(replace(
        "DTSTAMP",
        Some(format!("DTSTAMP:{stamp}")),
        &mut lines,
    ));
    added.extend(replace(
        "LAST-MODIFIED",
        Some(format!("LAST-MODIFIED:{stamp}")),
        &mut lines,
    ));
    // RFC 5545 puts an event's properties before its VALARMs.
    let props_at = (begin + 1..end)
        .find(|&i| component(&lines[i], "BEGIN").is_some())
        .unwrap_or(end);
    let mut alarm = changes
        .alarm
        .map(|(minutes, text)| alarm_lines(minutes, text))
        .unwrap_or_default();
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + added.len() + alarm.len());
    for (i, line) in lines.into_iter().enumerate() {
        if i == props_at {
            out.append(&mut added);
        }
        if i == end {
            out.append(&mut alarm);
        }
        if !removed.contains(&i) {
            out.push(line);
        }
    }
    Ok(fold(&out))
}

/// A VALARM that shows `text` `minutes` before the start.
pub(super) fn alarm_lines(minutes: i64, text: &str) -> Vec<String> {
    vec![
        "BEGIN:VALARM".into(),
        "ACTION:DISPLAY".into(),
        format!("DESCRIPTION:{}", escape(text)),
        format!("TRIGGER:{}", trigger(minutes)),
        "END:VALARM".into(),
    ]
}

fn trigger(minutes: i64) -> String {
    let sign = if minutes > 0 { "-" } else { "" };
    format!("{sign}PT{}M", minutes.unsigned_abs())
}

/// DTSTART and DTEND lines for a span: UTC times, or dates for all-day events.
pub(super) fn time_lines(span: Span) -> (String, String) {
    if span.all_day {
        let date = |ms| utc_date(ms).format("%Y%m%d").to_string();
        (
            format!("DTSTART;VALUE=DATE:{}", date(span.start_ms)),
            format!(
                "DTEND;VALUE=DATE:{}",
                date(
                    span.end_ms
                        .max(span.start_ms + Duration::days(1).num_milliseconds())
                )
            ),
        )
    } else {
        (
            format!("DTSTART:{}", utc_stamp(span.start_ms)),
            format!("DTEND:{}", utc_stamp(span.end_ms)),
        )
    }
}

/// TEXT escaping (RFC 5545 §3.3.11).
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Content lines with folding undone and blank lines dropped.
fn unfold(ics: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for raw in ics.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(rest) = raw.strip_prefix([' ', '\t'])
            && let Some(last) = lines.last_mut()
        {
            last.push_str(rest);
            continue;
        }
        if !raw.trim().is_empty() {
            lines.push(raw.to_string());
        }
    }
    lines
}

/// A content line's property name, upper-cased.
fn prop_name(line: &str) -> String {
    line.split([';', ':'])
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_uppercase()
}

fn component(line: &str, keyword: &str) -> Option<String> {
    let (name, value) = line.split_once(':')?;
    name.trim()
        .eq_ignore_ascii_case(keyword)
        .then(|| value.trim().to_ascii_uppercase())
}

/// The line range (BEGIN, END) of the master VEVENT.
fn master_range(lines: &[String]) -> Option<(usize, usize)> {
    let mut events: Vec<(usize, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut open = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = component(line, "BEGIN") {
            depth += 1;
            if name == "VEVENT" && depth == 2 {
                open = Some(i);
            }
        } else if let Some(name) = component(line, "END") {
            if name == "VEVENT"
                && depth == 2
                && let Some(begin) = open.take()
            {
                events.push((begin, i));
            }
            depth = depth.saturating_sub(1);
        }
    }
    events
        .iter()
        .find(|&&(b, e)| {
            !own_lines(lines, b, e)
                .iter()
                .any(|&i| prop_name(&lines[i]) == "RECURRENCE-ID")
        })
        .or_else(|| events.first())
        .copied()
}

/// Indexes of the property lines that belong to the VEVENT itself (not to its VALARMs).
fn own_lines(lines: &[String], begin: usize, end: usize) -> Vec<usize> {
    let mut nested = 0usize;
    let mut own = Vec::new();
    for (i, line) in lines.iter().enumerate().take(end).skip(begin + 1) {
        if component(line, "BEGIN").is_some() {
            nested += 1;
        } else if component(line, "END").is_some() {
            nested = nested.saturating_sub(1);
        } else if nested == 0 {
            own.push(i);
        }
    }
    own
}

/// Lines joined with CRLF, each folded at 75 octets on character boundaries.
fn fold(lines: &[String]) -> String {
    let mut out = String::new();
    for line in lines {
        let mut width = 0;
        for c in line.chars() {
            if width + c.len_utf8() > 75 {
                out.push_str("\r\n ");
                width = 1;
            }
            out.push(c);
            width += c.len_utf8();
        }
        out.push_str("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::ical::master;
    use super::*;

    const OTHER: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//x//EN\r\nBEGIN:VEVENT\r\nUID:u1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261120T090000\r\nDURATION:PT1H\r\nSUMMARY:Old\r\nDESCRIPTION:a long private text that is long enough to have been folded by the\r\n  other client\r\nATTENDEE;CN=\"Doe, John\";ROLE=REQ-PARTICIPANT:mailto:j@x.org\r\nX-CUSTOM;X-P=\"a:b\":keep me\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nSUMMARY:not the event's\r\nTRIGGER:-PT5M\r\nEND:VALARM\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:u1\r\nRECURRENCE-ID:20261127T080000Z\r\nDTSTART:20261127T100000Z\r\nSUMMARY:Moved one\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    #[test]
    fn changes_only_what_was_asked() {
        let span = Span {
            start_ms: 1_795_000_000_000,
            end_ms: 1_795_003_600_000,
            all_day: false,
        };
        let changes = Changes {
            title: Some("New, better; title"),
            location: Some(Some("Room 1")),
            span: Some(span),
            alarm: Some((30, "New, better; title")),
        };
        let out = apply(OTHER, &changes, 1_795_000_000_000).unwrap();
        for kept in [
            "ATTENDEE;CN=\"Doe, John\";ROLE=REQ-PARTICIPANT:mailto:j@x.org\r\n",
            "X-CUSTOM;X-P=\"a:b\":keep me\r\n",
            "SUMMARY:not the event's\r\n",
            "SUMMARY:Moved one\r\n",
            "DESCRIPTION:a long private text that is long enough to have been folded by the other client\r\n",
        ] {
            assert!(
                out.replace("\r\n ", "").contains(kept),
                "{kept} missing from\n{out}"
            );
        }
        let location = out.find("LOCATION:Room 1").unwrap();
        assert!(location < out.find("BEGIN:VALARM").unwrap());
        assert!(out.find("TRIGGER:-PT30M").unwrap() < out.find("END:VEVENT").unwrap());
        assert!(!out.contains("DURATION") && !out.contains("SUMMARY:Old"));
        assert!(out.contains("SUMMARY:New\\, better\\; title\r\n"));
        assert!(out.contains("TRIGGER:-PT30M\r\n"));
        assert!(out.lines().all(|l| l.len() <= 76));
        let event = master(&out).unwrap();
        assert_eq!(event.title, "New, better; title");
        assert_eq!(event.location.as_deref(), Some("Room 1"));
        assert_eq!(event.span, span);
        assert_eq!(event.reminders, vec![5, 30]);
    }

    #[test]
    fn removes_a_location_and_writes_dates() {
        let with = apply(
            OTHER,
            &Changes {
                location: Some(Some("X")),
                ..Changes::default()
            },
            0,
        )
        .unwrap();
        let without = apply(
            &with,
            &Changes {
                location: Some(None),
                ..Changes::default()
            },
            0,
        )
        .unwrap();
        assert!(!without.contains("LOCATION"));
        let day = Span {
            start_ms: 1_795_132_800_000,
            end_ms: 1_795_219_200_000,
            all_day: true,
        };
        let out = apply(
            OTHER,
            &Changes {
                span: Some(day),
                ..Changes::default()
            },
            0,
        )
        .unwrap();
        assert!(out.contains("DTSTART;VALUE=DATE:"));
        assert_eq!(master(&out).unwrap().span, day);
        assert!(
            apply(
                "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n",
                &Changes::default(),
                0
            )
            .is_err()
        );
    }
}
