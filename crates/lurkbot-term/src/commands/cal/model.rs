//! The calendar data model shared by both backends, and its JSON form (only the fields the
//! documented fields allow: descriptions, attendees and URLs are never part of it).

use serde_json::{Value, json};

use super::times::{Zone, show, show_in};

/// A calendar (its documented fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Calendar {
    /// Integer id, stable for the backend.
    pub(super) id: i64,
    /// The name shown to people.
    pub(super) display_name: String,
    /// The account it belongs to (`local`, or the CalDAV user).
    pub(super) account_name: String,
    /// `local` or `caldav`.
    pub(super) account_type: String,
    /// The owner (same as the account here).
    pub(super) owner_account: String,
    /// Whether it is shown.
    pub(super) visible: bool,
    /// Whether it is the default calendar.
    pub(super) is_primary: bool,
}

impl Calendar {
    /// The documented JSON form.
    pub(super) fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "display_name": self.display_name,
            "account_name": self.account_name,
            "account_type": self.account_type,
            "owner_account": self.owner_account,
            "visible": self.visible,
            "is_primary": self.is_primary,
        })
    }
}

/// When an event happens. All-day events run from UTC midnight of their first day to UTC
/// midnight after their last day (end exclusive), as Android's Calendar Provider stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    /// Start, ms since the epoch.
    pub(super) start_ms: i64,
    /// End (exclusive), ms since the epoch.
    pub(super) end_ms: i64,
    /// Whether the event covers whole days.
    pub(super) all_day: bool,
}

/// A reminder: minutes before the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reminder {
    /// Integer id.
    pub(super) id: i64,
    /// Minutes before the event starts.
    pub(super) minutes: i64,
}

/// An event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Event {
    /// Integer id, stable for the backend.
    pub(super) id: i64,
    /// The calendar it belongs to.
    pub(super) calendar_id: i64,
    /// iCalendar UID.
    pub(super) uid: String,
    /// Title (SUMMARY).
    pub(super) title: String,
    /// When.
    pub(super) span: Span,
    /// Where.
    pub(super) location: Option<String>,
    /// Reminders, oldest first.
    pub(super) reminders: Vec<Reminder>,
    /// RRULE of a recurring series (CalDAV events written by other clients).
    pub(super) rrule: Option<String>,
    /// Whether the event repeats (this may be one occurrence of a series).
    pub(super) recurring: bool,
}

impl Event {
    /// The documented JSON form, plus readable `start`/`end` and the reminder minutes.
    /// The JSON form: UTC instants (`start_time_ms`, `start`) and their rendering in `zone`
    /// (`start_local`).
    pub(super) fn to_json(&self, zone: &Zone) -> Value {
        json!({
            "id": self.id,
            "calendar_id": self.calendar_id,
            "title": self.title,
            "start_time_ms": self.span.start_ms,
            "end_time_ms": self.span.end_ms,
            "all_day": self.span.all_day,
            "location": self.location,
            "start": show(self.span.start_ms, self.span.all_day, false),
            "end": show(self.span.end_ms, self.span.all_day, true),
            "start_local": show_in(zone, self.span.start_ms, self.span.all_day, false),
            "end_local": show_in(zone, self.span.end_ms, self.span.all_day, true),
            "reminder_minutes": self.reminders.iter().map(|r| r.minutes).collect::<Vec<_>>(),
            "recurring": self.recurring,
        })
    }
}

/// A new event.
#[derive(Debug, Clone)]
pub(super) struct NewEvent {
    /// Target calendar.
    pub(super) calendar_id: i64,
    /// Title.
    pub(super) title: String,
    /// When.
    pub(super) span: Span,
    /// Where.
    pub(super) location: Option<String>,
    /// One reminder, minutes before the start.
    pub(super) remind_minutes: Option<i64>,
}
