//! The backend chosen in `config.toml` (`[calendar] backend = "local" | "caldav"`), behind one
//! interface the subcommands use.

use super::local::LocalStore;
use super::model::{Calendar, Event, NewEvent};
use crate::{CommandCtx, CommandError, ErrorCode};

/// An opened backend.
pub(super) enum Backend {
    /// The embedded SQLite store.
    Local(LocalStore),
}

impl Backend {
    /// Opens the configured backend.
    ///
    /// # Errors
    /// `ConfigInvalid` for an unknown backend, `IoError` when the store cannot be opened.
    pub(super) fn open(ctx: &CommandCtx<'_>) -> Result<Self, CommandError> {
        let config = ctx.config()?;
        match config.calendar.backend.as_deref().unwrap_or("local") {
            "local" => Ok(Self::Local(LocalStore::open(ctx.home)?)),
            other => Err(CommandError::new(
                ErrorCode::ConfigInvalid,
                format!("calendar.backend = '{other}' is not a backend this build knows"),
            )
            .with_hint("use: lurkbot config set calendar.backend local")),
        }
    }

    /// Every calendar.
    pub(super) async fn calendars(&mut self) -> Result<Vec<Calendar>, CommandError> {
        match self {
            Self::Local(s) => s.calendars(),
        }
    }

    /// Events overlapping `[from, to)`.
    pub(super) async fn events(
        &mut self,
        from: i64,
        to: i64,
        calendar_id: Option<i64>,
    ) -> Result<Vec<Event>, CommandError> {
        match self {
            Self::Local(s) => s.events(from, to, calendar_id),
        }
    }

    /// Every event of a calendar.
    pub(super) async fn all_events(
        &mut self,
        calendar_id: i64,
    ) -> Result<Vec<Event>, CommandError> {
        match self {
            Self::Local(s) => s.all_events(calendar_id),
        }
    }

    /// One event, or `NotFound`.
    pub(super) async fn event(&mut self, id: i64) -> Result<Event, CommandError> {
        let found = match self {
            Self::Local(s) => s.event(id)?,
        };
        found.ok_or_else(|| not_found("event", id))
    }

    /// Checks that a calendar exists (`NotFound` otherwise).
    pub(super) async fn require_calendar(&mut self, id: i64) -> Result<(), CommandError> {
        let exists = match self {
            Self::Local(s) => s.has_calendar(id)?,
        };
        if exists {
            Ok(())
        } else {
            Err(not_found("calendar", id))
        }
    }

    /// Creates an event; returns its id and the reminder's.
    pub(super) async fn create(
        &mut self,
        new: &NewEvent,
    ) -> Result<(i64, Option<i64>), CommandError> {
        let uid = format!("{}@lurkbot", lurkbot_core::random_hex(16));
        let now = now();
        match self {
            Self::Local(s) => s.create(new, &uid, now),
        }
    }

    /// Stores an event's changed fields.
    pub(super) async fn save(&mut self, event: &Event) -> Result<(), CommandError> {
        let now = now();
        match self {
            Self::Local(s) => s.save(event, now),
        }
    }

    /// Deletes an event.
    pub(super) async fn delete(&mut self, id: i64) -> Result<(), CommandError> {
        match self {
            Self::Local(s) => s.delete(id),
        }
    }

    /// Adds a reminder; returns its id.
    pub(super) async fn add_reminder(
        &mut self,
        event_id: i64,
        minutes: i64,
    ) -> Result<i64, CommandError> {
        match self {
            Self::Local(s) => s.add_reminder(event_id, minutes),
        }
    }
}

fn now() -> i64 {
    i64::try_from(lurkbot_core::now_ms()).unwrap_or(i64::MAX)
}

/// `NotFound` for an unknown id.
pub(super) fn not_found(what: &str, id: i64) -> CommandError {
    CommandError::new(ErrorCode::NotFound, format!("no {what} with id {id}")).with_hint(
        if what == "calendar" {
            "'cal list-calendars' shows the calendar ids"
        } else {
            "'cal list-events --from … --to …' shows the event ids"
        },
    )
}
