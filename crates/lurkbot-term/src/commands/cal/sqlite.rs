//! Opening the calendar's SQLite files (`calendar.db`, `caldav.db`) the same way: folder
//! created, 5 s busy wait for another process's write, foreign keys on, full sync, schema
//! applied.

use rusqlite::Connection;

use crate::{CommandError, ErrorCode};

/// Opens (creating when needed) `rel` under the home with `schema`; `fail` names the file in
/// errors.
///
/// # Errors
/// `IoError`.
pub(super) fn open(
    home: &lurkbot_core::Home,
    rel: &str,
    schema: &str,
    fail: fn(&rusqlite::Error) -> CommandError,
) -> Result<Connection, CommandError> {
    let path = home.join(rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            CommandError::new(
                ErrorCode::IoError,
                format!("cannot create workspace/cal: {e}"),
            )
        })?;
    }
    let conn = Connection::open(&path).map_err(|e| fail(&e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| fail(&e))?;
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
        .map_err(|e| fail(&e))?;
    conn.execute_batch(schema).map_err(|e| fail(&e))?;
    Ok(conn)
}
