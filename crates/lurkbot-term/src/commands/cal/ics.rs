//! Writing iCalendar (RFC 5545): `cal export` and the objects the CalDAV backend creates.
//! Events carry UID, DTSTAMP, DTSTART/DTEND (UTC times, or dates for all-day events), SUMMARY,
//! LOCATION, RRULE for a recurring series, and one VALARM per reminder. Descriptions, attendees
//! and URLs are not part of the model, so they are never exported (privacy by default).

use chrono::{DateTime, Duration, Utc};
use icalendar::{Alarm, Calendar as Ics, Component, EventLike, Trigger};

use super::model::{Calendar, Event};
use super::times::utc_date;

/// The iCalendar text of `calendar` with `events`.
pub(super) fn export(calendar: &Calendar, events: &[Event]) -> String {
    let mut ics = Ics::new();
    ics.name(&calendar.display_name);
    let stamp = Utc::now();
    for event in events {
        ics.push(vevent(event, stamp));
    }
    ics.done().to_string()
}

/// One event as a whole iCalendar object (what a CalDAV server stores per resource).
pub(super) fn object(event: &Event) -> String {
    let mut ics = Ics::new();
    ics.push(vevent(event, Utc::now()));
    ics.done().to_string()
}

/// Text for a TEXT property (RFC 5545 §3.3.11): line breaks of any kind become `\n` (escaped by
/// the writer), every other control character but TAB is dropped, so no stored title can start
/// a line of its own (a bare CR would, for a universal-newline reader).
fn text(value: &str) -> String {
    value
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

fn vevent(event: &Event, stamp: DateTime<Utc>) -> icalendar::Event {
    let mut item = icalendar::Event::new();
    let title = text(&event.title);
    item.uid(&text(&event.uid)).summary(&title).timestamp(stamp);
    if event.span.all_day {
        item.starts(utc_date(event.span.start_ms))
            .ends(utc_date(event.span.end_ms));
    } else {
        item.starts(utc(event.span.start_ms))
            .ends(utc(event.span.end_ms));
    }
    if let Some(location) = &event.location {
        item.location(&text(location));
    }
    if let Some(rrule) = &event.rrule {
        item.add_property("RRULE", rrule);
    }
    for reminder in &event.reminders {
        item.alarm(Alarm::display(
            &title,
            Trigger::before_start(Duration::minutes(reminder.minutes)),
        ));
    }
    item.done()
}

fn utc(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::model::Span;
    use super::*;

    #[test]
    fn stored_control_characters_cannot_inject_lines() {
        let event = Event {
            id: 1,
            calendar_id: 1,
            uid: "u1@lurkbot".into(),
            title: "Lunch\rBEGIN:VEVENT\r\nUID:evil\u{1b}[2J".into(),
            span: Span {
                start_ms: 1_763_719_200_000,
                end_ms: 1_763_722_800_000,
                all_day: false,
            },
            location: Some("Room\r1".into()),
            reminders: Vec::new(),
            rrule: None,
            recurring: false,
        };
        let calendar = Calendar {
            id: 1,
            display_name: "Personal".into(),
            account_name: "local".into(),
            account_type: "local".into(),
            owner_account: "local".into(),
            visible: true,
            is_primary: true,
        };
        let ics = export(&calendar, &[event]);
        // Read as a universal-newline reader would: CR, LF and CRLF all end a line.
        let lines: Vec<&str> = ics.split(['\r', '\n']).filter(|l| !l.is_empty()).collect();
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("BEGIN:VEVENT"))
                .count(),
            1,
            "{ics}"
        );
        assert!(!lines.iter().any(|l| l.starts_with("UID:evil")), "{ics}");
        assert!(!ics.contains('\u{1b}'));
        assert!(
            ics.replace("\r\n", "").find('\r').is_none(),
            "no bare CR: {ics:?}"
        );
    }
}
