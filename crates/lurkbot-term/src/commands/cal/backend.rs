//! The backend chosen in `config.toml` (`[calendar] backend = "local" | "caldav"`), behind one
//! interface the subcommands use.

use super::caldav::CalDavStore;
use super::local::LocalStore;
use super::model::{Calendar, Event, NewEvent};
use crate::{CommandCtx, CommandError, ErrorCode};

/// An opened backend.
pub(super) enum Backend {
    /// The embedded SQLite store.
    Local(LocalStore),
    /// A CalDAV account.
    CalDav(Box<CalDavStore>),
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
            "caldav" => Ok(Self::CalDav(Box::new(CalDavStore::open(ctx)?))),
            other => Err(CommandError::new(
                ErrorCode::ConfigInvalid,
                format!("calendar.backend = '{other}' is not a backend this build knows"),
            )
            .with_hint("use: lurkbot config set calendar.backend local (or caldav)")),
        }
    }

    /// Every calendar.
    pub(super) async fn calendars(&mut self) -> Result<Vec<Calendar>, CommandError> {
        match self {
            Self::Local(s) => s.calendars(),
            Self::CalDav(s) => s.calendars().await,
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
            Self::CalDav(s) => s.events(from, to, calendar_id).await,
        }
    }

    /// Every event of a calendar.
    pub(super) async fn all_events(
        &mut self,
        calendar_id: i64,
    ) -> Result<Vec<Event>, CommandError> {
        match self {
            Self::Local(s) => s.all_events(calendar_id),
            Self::CalDav(s) => s.all_events(calendar_id).await,
        }
    }

    /// One event, or `NotFound`.
    pub(super) async fn event(&mut self, id: i64) -> Result<Event, CommandError> {
        let found = match self {
            Self::Local(s) => s.event(id)?,
            Self::CalDav(s) => s.event(id).await?,
        };
        found.ok_or_else(|| not_found("event", id))
    }

    /// Checks that a calendar exists (`NotFound` otherwise).
    pub(super) async fn require_calendar(&mut self, id: i64) -> Result<(), CommandError> {
        let exists = match self {
            Self::Local(s) => s.has_calendar(id)?,
            Self::CalDav(s) => s.has_calendar(id).await?,
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
        let now = now_ms();
        match self {
            Self::Local(s) => s.create(new, &uid, now),
            Self::CalDav(s) => s.create(new, &uid).await,
        }
    }

    /// Stores an event's changed fields.
    pub(super) async fn save(&mut self, event: &Event) -> Result<(), CommandError> {
        let now = now_ms();
        match self {
            Self::Local(s) => s.save(event, now),
            Self::CalDav(s) => s.save(event, now).await,
        }
    }

    /// Deletes an event.
    pub(super) async fn delete(&mut self, id: i64) -> Result<(), CommandError> {
        match self {
            Self::Local(s) => s.delete(id),
            Self::CalDav(s) => s.delete(id).await,
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
            Self::CalDav(s) => s.add_reminder(event_id, minutes, now_ms()).await,
        }
    }
}

impl Backend {
    /// Whether event text comes from other people (a shared server) and must be labelled
    /// untrusted before a model reads it.
    pub(super) fn third_party(&self) -> bool {
        matches!(self, Self::CalDav(_))
    }

    /// Objects of the last listing that could not be read.
    pub(super) fn skipped(&self) -> usize {
        match self {
            Self::Local(_) => 0,
            Self::CalDav(s) => s.skipped,
        }
    }
}

/// Now, in ms since the epoch.
pub(super) fn now_ms() -> i64 {
    i64::try_from(lurkbot_core::now_ms()).unwrap_or(i64::MAX)
}

/// `NotFound` for an unknown id.
pub(super) fn not_found(what: &str, id: i64) -> CommandError {
    CommandError::new(ErrorCode::NotFound, format!("no {what} with id {id}")).with_hint(
        if what == "calendar" {
            "'cal list-calendars' shows the calendar ids"
        } else {
            "'cal list-events' shows the event ids"
        },
    )
}
