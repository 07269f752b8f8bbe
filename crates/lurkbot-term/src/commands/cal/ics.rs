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

fn vevent(event: &Event, stamp: DateTime<Utc>) -> icalendar::Event {
    let mut item = icalendar::Event::new();
    item.uid(&event.uid).summary(&event.title).timestamp(stamp);
    if event.span.all_day {
        item.starts(utc_date(event.span.start_ms))
            .ends(utc_date(event.span.end_ms));
    } else {
        item.starts(utc(event.span.start_ms))
            .ends(utc(event.span.end_ms));
    }
    if let Some(location) = &event.location {
        item.location(location);
    }
    if let Some(rrule) = &event.rrule {
        item.add_property("RRULE", rrule);
    }
    for reminder in &event.reminders {
        item.alarm(Alarm::display(
            &event.title,
            Trigger::before_start(Duration::minutes(reminder.minutes)),
        ));
    }
    item.done()
}

fn utc(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
