//! The embedded backend: `state/state.sqlite` in the home, SQLite in WAL mode.
//!
//! Durability: the store runs with `synchronous = NORMAL` (a killed process loses nothing
//! written; a power cut may lose the last commits, never the file's consistency). The records a
//! source is acknowledged on — an admitted message, an outgoing message before it is sent — are
//! committed with `synchronous = FULL` ([`durably`]), so even a power cut keeps them.

use std::path::Path;

use lurkbot_core::{Home, layout};
use rusqlite::Connection;

use crate::StateError;
use crate::sql::{Lite, Sql};

/// The store's file, relative to the home.
pub const STATE_FILE: &str = "state/state.sqlite";

/// The schema version this build writes (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 3;

/// Opens the store of `home`, creating its folder (0700) and file (0600) and bringing the
/// schema up to date.
pub(crate) fn open(home: &Home) -> Result<Connection, StateError> {
    let path = home.join(layout::STATE).join("state.sqlite");
    if let Some(dir) = path.parent() {
        lurkbot_core::create_private_dir(dir)?;
    }
    create_private_file(&path)?;
    let conn = Connection::open(&path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrate(&conn)?;
    Ok(conn)
}

/// Creates `path` empty with mode 0600 when it does not exist (SQLite gives its WAL and
/// shared-memory files the database file's mode).
fn create_private_file(path: &Path) -> Result<(), StateError> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .map(drop)
        .map_err(|e| lurkbot_core::CoreError::io("create", path, e).into())
}

fn migrate(conn: &Connection) -> Result<(), StateError> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(StateError::Newer {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < SCHEMA_VERSION {
        let mut steps = String::new();
        if found < 1 {
            steps.push_str(&crate::sql::tables_v1("INTEGER", ""));
        }
        if found < 2 {
            steps.push_str(&crate::sql::tables_v2("INTEGER"));
        }
        steps.push_str(&crate::sql::tables_v3("INTEGER", ""));
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {steps} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))?;
    }
    Ok(())
}

/// The schema version of the store (`PRAGMA user_version`).
pub(crate) fn version(conn: &Connection) -> Result<i64, StateError> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Whether the store answers, with the schema this build writes (another gateway on the home
/// may have moved it on since this one opened it).
pub(crate) fn check(conn: &Connection) -> Result<(), StateError> {
    let found = version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(StateError::Newer {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Runs `f` in one transaction committed with `synchronous = FULL`: a record a source is
/// acknowledged on survives a power cut too.
pub(crate) fn durably<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError>,
) -> Result<T, StateError> {
    conn.pragma_update(None, "synchronous", "FULL")?;
    let result = exclusively(conn, f);
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    result
}

/// Runs `f` in one transaction no other writer interleaves with, committed without waiting for
/// the disk (what a power cut could lose — a lease — dies with the gateway holding it anyway).
pub(crate) fn exclusively<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError>,
) -> Result<T, StateError> {
    // Immediate: the write lock is taken first, so a read inside never has to upgrade
    // (which another gateway's write would refuse at once, busy timeout or not).
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let value = f(&mut Lite(&tx))?;
    tx.commit()?;
    Ok(value)
}
