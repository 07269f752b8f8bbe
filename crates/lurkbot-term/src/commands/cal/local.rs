//! The `local` backend: an embedded SQLite database at `workspace/cal/calendar.db`. A
//! "Personal" calendar (primary) is created on first use. Every change is one transaction, so a
//! crash leaves the previous state; ids are never reused.

use rusqlite::{Connection, OptionalExtension, params};

use super::model::{Calendar, Event, NewEvent, Reminder, Span};
use crate::{CommandError, ErrorCode};

/// Where the database lives, relative to the home.
pub(super) const DB: &str = "workspace/cal/calendar.db";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS calendars (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    display_name TEXT NOT NULL,
    account_name TEXT NOT NULL,
    account_type TEXT NOT NULL,
    owner_account TEXT NOT NULL,
    visible INTEGER NOT NULL DEFAULT 1,
    is_primary INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    calendar_id INTEGER NOT NULL REFERENCES calendars(id),
    uid TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    start_ms INTEGER NOT NULL,
    end_ms INTEGER NOT NULL,
    all_day INTEGER NOT NULL,
    location TEXT,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_time ON events(calendar_id, start_ms, end_ms);
CREATE TABLE IF NOT EXISTS reminders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    minutes INTEGER NOT NULL
);
";

/// The open database.
pub(super) struct LocalStore {
    conn: Connection,
}

/// A database failure as an `IoError` naming the file.
pub(super) fn db_error(e: &rusqlite::Error) -> CommandError {
    CommandError::new(ErrorCode::IoError, format!("calendar database {DB}: {e}"))
        .with_hint("check free space and permissions; the database was left as it was")
}

impl LocalStore {
    /// Opens (creating when needed) the database and makes sure the Personal calendar exists.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn open(home: &lurkbot_core::Home) -> Result<Self, CommandError> {
        let conn = super::sqlite::open(home, DB, SCHEMA, db_error)?;
        conn.execute(
            "INSERT INTO calendars (display_name, account_name, account_type, owner_account, visible, is_primary)
             SELECT 'Personal', 'local', 'local', 'local', 1, 1
             WHERE NOT EXISTS (SELECT 1 FROM calendars)",
            [],
        )
        .map_err(|e| db_error(&e))?;
        Ok(Self { conn })
    }

    /// Every calendar, by id.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn calendars(&self) -> Result<Vec<Calendar>, CommandError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, display_name, account_name, account_type, owner_account, visible, is_primary
                 FROM calendars ORDER BY id",
            )
            .map_err(|e| db_error(&e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Calendar {
                    id: r.get(0)?,
                    display_name: r.get(1)?,
                    account_name: r.get(2)?,
                    account_type: r.get(3)?,
                    owner_account: r.get(4)?,
                    visible: r.get(5)?,
                    is_primary: r.get(6)?,
                })
            })
            .map_err(|e| db_error(&e))?;
        rows.collect::<Result<_, _>>().map_err(|e| db_error(&e))
    }

    /// Events overlapping `[from, to)` (an event that starts before `to` and ends after
    /// `from`; a zero-length event counts when it starts inside), by start time.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn events(
        &self,
        from: i64,
        to: i64,
        calendar_id: Option<i64>,
    ) -> Result<Vec<Event>, CommandError> {
        let ids: Vec<i64> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT id FROM events
                     WHERE (?3 IS NULL OR calendar_id = ?3)
                       AND start_ms < ?2
                       AND (end_ms > ?1 OR (end_ms = start_ms AND start_ms >= ?1))
                     ORDER BY start_ms, id",
                )
                .map_err(|e| db_error(&e))?;
            let rows = stmt
                .query_map(params![from, to, calendar_id], |r| r.get(0))
                .map_err(|e| db_error(&e))?;
            rows.collect::<Result<_, _>>().map_err(|e| db_error(&e))?
        };
        ids.into_iter()
            .map(|id| {
                self.event(id)?
                    .ok_or_else(|| CommandError::new(ErrorCode::Internal, "event vanished"))
            })
            .collect()
    }

    /// Every event of a calendar (for export).
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn all_events(&self, calendar_id: i64) -> Result<Vec<Event>, CommandError> {
        self.events(i64::MIN, i64::MAX, Some(calendar_id))
    }

    /// One event, if it exists.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn event(&self, id: i64) -> Result<Option<Event>, CommandError> {
        let row = self
            .conn
            .query_row(
                "SELECT id, calendar_id, uid, title, start_ms, end_ms, all_day, location FROM events WHERE id = ?1",
                [id],
                |r| {
                    Ok(Event {
                        id: r.get(0)?,
                        calendar_id: r.get(1)?,
                        uid: r.get(2)?,
                        title: r.get(3)?,
                        span: Span {
                            start_ms: r.get(4)?,
                            end_ms: r.get(5)?,
                            all_day: r.get(6)?,
                        },
                        location: r.get(7)?,
                        reminders: Vec::new(),
                        rrule: None,
                        recurring: false,
                    })
                },
            )
            .optional()
            .map_err(|e| db_error(&e))?;
        let Some(mut event) = row else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare("SELECT id, minutes FROM reminders WHERE event_id = ?1 ORDER BY id")
            .map_err(|e| db_error(&e))?;
        event.reminders = stmt
            .query_map([id], |r| {
                Ok(Reminder {
                    id: r.get(0)?,
                    minutes: r.get(1)?,
                })
            })
            .map_err(|e| db_error(&e))?
            .collect::<Result<_, _>>()
            .map_err(|e| db_error(&e))?;
        Ok(Some(event))
    }

    /// Whether a calendar exists.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn has_calendar(&self, id: i64) -> Result<bool, CommandError> {
        self.conn
            .query_row("SELECT 1 FROM calendars WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| db_error(&e))
    }

    /// Creates an event (and its reminder), returning the event and reminder ids.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn create(
        &mut self,
        new: &NewEvent,
        uid: &str,
        now_ms: i64,
    ) -> Result<(i64, Option<i64>), CommandError> {
        let tx = self.conn.transaction().map_err(|e| db_error(&e))?;
        tx.execute(
            "INSERT INTO events (calendar_id, uid, title, start_ms, end_ms, all_day, location, created_ms, updated_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
            params![
                new.calendar_id,
                uid,
                new.title,
                new.span.start_ms,
                new.span.end_ms,
                new.span.all_day,
                new.location,
                now_ms
            ],
        )
        .map_err(|e| db_error(&e))?;
        let event_id = tx.last_insert_rowid();
        let reminder_id = match new.remind_minutes {
            Some(minutes) => {
                tx.execute(
                    "INSERT INTO reminders (event_id, minutes) VALUES (?1, ?2)",
                    params![event_id, minutes],
                )
                .map_err(|e| db_error(&e))?;
                Some(tx.last_insert_rowid())
            }
            None => None,
        };
        tx.commit().map_err(|e| db_error(&e))?;
        Ok((event_id, reminder_id))
    }

    /// Replaces an event's fields.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn save(&mut self, event: &Event, now_ms: i64) -> Result<(), CommandError> {
        self.conn
            .execute(
                "UPDATE events SET title = ?2, start_ms = ?3, end_ms = ?4, all_day = ?5, location = ?6, updated_ms = ?7
                 WHERE id = ?1",
                params![
                    event.id,
                    event.title,
                    event.span.start_ms,
                    event.span.end_ms,
                    event.span.all_day,
                    event.location,
                    now_ms
                ],
            )
            .map(|_| ())
            .map_err(|e| db_error(&e))
    }

    /// Deletes an event and its reminders.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn delete(&mut self, id: i64) -> Result<(), CommandError> {
        self.conn
            .execute("DELETE FROM events WHERE id = ?1", [id])
            .map(|_| ())
            .map_err(|e| db_error(&e))
    }

    /// Adds a reminder, returning its id.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn add_reminder(
        &mut self,
        event_id: i64,
        minutes: i64,
    ) -> Result<i64, CommandError> {
        self.conn
            .execute(
                "INSERT INTO reminders (event_id, minutes) VALUES (?1, ?2)",
                params![event_id, minutes],
            )
            .map_err(|e| db_error(&e))?;
        Ok(self.conn.last_insert_rowid())
    }
}
