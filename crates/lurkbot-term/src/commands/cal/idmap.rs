//! The CalDAV backend's integer ids: SQLite at `workspace/cal/caldav.db` maps calendar and
//! event URLs to the integer ids the commands use, and remembers each event's ETag as
//! last seen, which update and delete send as `If-Match`. Ids are never reused; a server that
//! is down changes nothing here.

use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, params};

use crate::{CommandError, ErrorCode};

/// Where the map lives, relative to the home.
pub(super) const DB: &str = "workspace/cal/caldav.db";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS calendars (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL UNIQUE,
    calendar_id INTEGER NOT NULL,
    etag TEXT
);
CREATE TABLE IF NOT EXISTS reminders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id INTEGER NOT NULL,
    minutes INTEGER NOT NULL
);
";

/// A mapped event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EventRow {
    /// Absolute URL of the object.
    pub(super) url: String,
    /// Calendar id.
    pub(super) calendar_id: i64,
    /// ETag when last seen.
    pub(super) etag: Option<String>,
}

/// The open map.
pub(super) struct IdMap {
    /// Behind a mutex so the backend can be held across awaits of a `Send` future.
    conn: Mutex<Connection>,
}

fn db_error(e: &rusqlite::Error) -> CommandError {
    CommandError::new(ErrorCode::IoError, format!("calendar id map {DB}: {e}"))
        .with_hint("check free space and permissions; the map was left as it was")
}

impl IdMap {
    /// Opens (creating when needed) the map.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn open(home: &lurkbot_core::Home) -> Result<Self, CommandError> {
        let conn = super::sqlite::open(home, DB, SCHEMA, db_error)?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The id of a calendar URL, assigned on first sight.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn calendar_id(&self, url: &str) -> Result<i64, CommandError> {
        self.conn()
            .execute("INSERT OR IGNORE INTO calendars (url) VALUES (?1)", [url])
            .map_err(|e| db_error(&e))?;
        self.conn()
            .query_row("SELECT id FROM calendars WHERE url = ?1", [url], |r| {
                r.get(0)
            })
            .map_err(|e| db_error(&e))
    }

    /// The URL of a calendar id.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn calendar_url(&self, id: i64) -> Result<Option<String>, CommandError> {
        self.conn()
            .query_row("SELECT url FROM calendars WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| db_error(&e))
    }

    /// Records an event as seen (assigning an id on first sight) with its current ETag.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn saw_event(
        &self,
        url: &str,
        calendar_id: i64,
        etag: Option<&str>,
    ) -> Result<i64, CommandError> {
        self.conn()
            .execute(
                "INSERT INTO events (url, calendar_id, etag) VALUES (?1, ?2, ?3)
                 ON CONFLICT(url) DO UPDATE SET calendar_id = ?2, etag = ?3",
                params![url, calendar_id, etag],
            )
            .map_err(|e| db_error(&e))?;
        self.conn()
            .query_row("SELECT id FROM events WHERE url = ?1", [url], |r| r.get(0))
            .map_err(|e| db_error(&e))
    }

    /// A mapped event.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn event(&self, id: i64) -> Result<Option<EventRow>, CommandError> {
        self.conn()
            .query_row(
                "SELECT url, calendar_id, etag FROM events WHERE id = ?1",
                [id],
                |r| {
                    Ok(EventRow {
                        url: r.get(0)?,
                        calendar_id: r.get(1)?,
                        etag: r.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(|e| db_error(&e))
    }

    /// Stores an event's new ETag after a change made here.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn set_etag(&self, id: i64, etag: Option<&str>) -> Result<(), CommandError> {
        self.conn()
            .execute(
                "UPDATE events SET etag = ?2 WHERE id = ?1",
                params![id, etag],
            )
            .map(drop)
            .map_err(|e| db_error(&e))
    }

    /// Forgets an event that is gone from the server.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn forget_event(&self, id: i64) -> Result<(), CommandError> {
        self.conn()
            .execute("DELETE FROM events WHERE id = ?1", [id])
            .map(drop)
            .map_err(|e| db_error(&e))
    }

    /// Assigns an id to a reminder added here.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn add_reminder(&self, event_id: i64, minutes: i64) -> Result<i64, CommandError> {
        let conn = self.conn();
        conn.execute(
            "INSERT INTO reminders (event_id, minutes) VALUES (?1, ?2)",
            params![event_id, minutes],
        )
        .map_err(|e| db_error(&e))?;
        Ok(conn.last_insert_rowid())
    }
}
