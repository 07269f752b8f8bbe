//! One way to speak SQL to either backend: the journal, inbound records, outbox and leases are
//! written once, in the SQL both SQLite and PostgreSQL understand, with `?1`-style parameters
//! (rewritten to `$1` for PostgreSQL) and the few differences behind [`Sql::seq`].

use crate::StateError;

/// A value bound to a parameter or read from a column: the store holds only integers and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Val {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// Text.
    Text(String),
}

impl From<&str> for Val {
    fn from(v: &str) -> Self {
        Self::Text(v.to_string())
    }
}

impl From<String> for Val {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}

impl From<&String> for Val {
    fn from(v: &String) -> Self {
        Self::Text(v.clone())
    }
}

impl From<i64> for Val {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

/// `?1`, `?2`, … from a list of values.
macro_rules! vals {
    ($($v:expr),* $(,)?) => { &[$($crate::sql::Val::from($v)),*] as &[$crate::sql::Val] };
}
pub(crate) use vals;

/// One row read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Row(pub(crate) Vec<Val>);

impl Row {
    fn at(&self, i: usize) -> &Val {
        self.0.get(i).unwrap_or(&Val::Null)
    }

    /// Column `i` as text (empty when NULL).
    pub(crate) fn text(&self, i: usize) -> String {
        self.opt_text(i).unwrap_or_default()
    }

    /// Column `i` as text, or `None` when NULL.
    pub(crate) fn opt_text(&self, i: usize) -> Option<String> {
        match self.at(i) {
            Val::Text(t) => Some(t.clone()),
            Val::Int(n) => Some(n.to_string()),
            Val::Null => None,
        }
    }

    /// Column `i` as an integer (0 when NULL).
    pub(crate) fn int(&self, i: usize) -> i64 {
        self.opt_int(i).unwrap_or_default()
    }

    /// Column `i` as an integer, or `None` when NULL.
    pub(crate) fn opt_int(&self, i: usize) -> Option<i64> {
        match self.at(i) {
            Val::Int(n) => Some(*n),
            Val::Text(t) => t.parse().ok(),
            Val::Null => None,
        }
    }

    /// Column `i` as a count: clamped to `0..=u32::MAX`.
    pub(crate) fn count(&self, i: usize) -> u32 {
        self.int(i).clamp(0, i64::from(u32::MAX)) as u32
    }

    /// Column `i` as milliseconds since the epoch (never negative).
    pub(crate) fn ms(&self, i: usize) -> u64 {
        self.int(i).max(0) as u64
    }
}

/// What both backends answer: statements run inside a transaction or on their own.
pub(crate) trait Sql {
    /// Runs one statement; how many rows it changed.
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, StateError>;
    /// Every row a query returns.
    fn rows(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StateError>;
    /// The column that orders rows as they were inserted (`rowid`, or PostgreSQL's `seq`).
    fn seq(&self) -> &'static str;
    /// Whether the gateway holding `owner`'s session lock still runs (PostgreSQL; the
    /// embedded store answers from its lock files instead, and never asks).
    fn owner_session_alive(&mut self, _owner: &str) -> Result<bool, StateError> {
        Ok(false)
    }

    /// The first row a query returns, if any.
    fn row(&mut self, sql: &str, params: &[Val]) -> Result<Option<Row>, StateError> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }
}

/// The embedded backend's side: a SQLite connection (or a transaction on it).
pub(crate) struct Lite<'a>(pub(crate) &'a rusqlite::Connection);

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            Self::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Self::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
            Self::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        })
    }
}

impl Sql for Lite<'_> {
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, StateError> {
        // Prepared once per connection: a journal write is a few of these per step, and
        // parsing the SQL each time would cost more than the write.
        let changed = self
            .0
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(params))?;
        Ok(changed as u64)
    }

    fn rows(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StateError> {
        let mut statement = self.0.prepare_cached(sql)?;
        let width = statement.column_count();
        let mut rows = statement.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut values = Vec::with_capacity(width);
            for i in 0..width {
                use rusqlite::types::ValueRef;
                values.push(match row.get_ref(i)? {
                    ValueRef::Null => Val::Null,
                    ValueRef::Integer(n) => Val::Int(n),
                    ValueRef::Real(f) => Val::Int(f as i64),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Val::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            out.push(Row(values));
        }
        Ok(out)
    }

    fn seq(&self) -> &'static str {
        "rowid"
    }
}

/// Version 1 of the tables, written once for both backends: inbound records, turns (with the
/// source that started them) and the outbox. `int` is the integer type; `seq` a first column
/// keeping the order rows came in (empty on SQLite, whose `rowid` does).
pub(crate) fn tables_v1(int: &str, seq: &str) -> String {
    format!(
        "
CREATE TABLE IF NOT EXISTS inbound (
    {seq}
    source      TEXT PRIMARY KEY,
    channel     TEXT NOT NULL,
    payload     TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_ms  {int} NOT NULL,
    updated_ms  {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS inbound_open ON inbound(state) WHERE state = 'received';
CREATE TABLE IF NOT EXISTS turns (
    {seq}
    id          TEXT PRIMARY KEY,
    source      TEXT UNIQUE,
    session     TEXT NOT NULL,
    origin      TEXT NOT NULL,
    message     TEXT NOT NULL,
    options     TEXT NOT NULL,
    state       TEXT NOT NULL,
    base        {int},
    step        {int} NOT NULL DEFAULT 0,
    tool        TEXT,
    reply       TEXT,
    error       TEXT,
    starts      {int} NOT NULL DEFAULT 0,
    created_ms  {int} NOT NULL,
    updated_ms  {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_open ON turns(state) WHERE state IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS turns_updated ON turns(updated_ms);
CREATE TABLE IF NOT EXISTS outbox (
    {seq}
    id          TEXT PRIMARY KEY,
    turn        TEXT,
    channel     TEXT NOT NULL,
    chat        TEXT NOT NULL,
    reply_to    TEXT,
    kind        TEXT NOT NULL,
    body        TEXT NOT NULL,
    state       TEXT NOT NULL,
    pieces_sent {int} NOT NULL DEFAULT 0,
    platform_id TEXT,
    attempts    {int} NOT NULL DEFAULT 0,
    error       TEXT,
    created_ms  {int} NOT NULL,
    updated_ms  {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_open ON outbox(state) WHERE state = 'pending';
"
    )
}

/// Version 2: leases (which gateway holds a turn, a channel, the schedule).
pub(crate) fn tables_v2(int: &str) -> String {
    format!(
        "
CREATE TABLE IF NOT EXISTS leases (
    name        TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    expires_ms  {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS leases_owner ON leases(owner);
"
    )
}

/// Schema 3: the budget holds of calls in flight (`holds.rs`), sign-in attempts
/// (`attempts.rs`), usage records (`usage.rs`), documents and logs (`documents.rs`), web UI
/// sign-ins (`sign_ins.rs`; `seq` as in [`tables_v1`]).
pub(crate) fn tables_v3(int: &str, seq: &str) -> String {
    format!(
        "
CREATE TABLE IF NOT EXISTS holds (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    agent       TEXT NOT NULL,
    tokens      {int} NOT NULL,
    micro_usd   {int} NOT NULL,
    expires_ms  {int} NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id          TEXT NOT NULL,
    key         TEXT NOT NULL,
    at_ms       {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_key ON attempts(key);
CREATE TABLE IF NOT EXISTS usage (
    {seq}
    ts_ms       {int} NOT NULL,
    record      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_ts ON usage(ts_ms);
CREATE TABLE IF NOT EXISTS documents (
    name        TEXT PRIMARY KEY,
    version     {int} NOT NULL,
    body        TEXT NOT NULL,
    updated_ms  {int} NOT NULL
);
CREATE TABLE IF NOT EXISTS log_lines (
    {seq}
    log         TEXT NOT NULL,
    line        TEXT NOT NULL,
    end_offset  {int} NOT NULL,
    created_ms  {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS log_lines_log ON log_lines(log, end_offset);
CREATE TABLE IF NOT EXISTS sign_ins (
    digest      TEXT PRIMARY KEY,
    username    TEXT NOT NULL,
    expires_ms  {int} NOT NULL
);
"
    )
}

/// `sql` with SQLite's `?N` parameters written as PostgreSQL's `$N` (the store's statements
/// hold no `?` inside a string literal).
pub(crate) fn dollar_params(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_rewritten_for_postgres_and_nothing_else() {
        assert_eq!(
            dollar_params("UPDATE t SET a = ?2 WHERE id = ?1 AND b = 'x'"),
            "UPDATE t SET a = $2 WHERE id = $1 AND b = 'x'"
        );
        assert_eq!(dollar_params("SELECT ? + ?10"), "SELECT ? + $10");
    }

    #[test]
    fn rows_read_back_what_was_bound() -> Result<(), StateError> {
        let conn = rusqlite::Connection::open_in_memory()?;
        let mut lite = Lite(&conn);
        lite.exec("CREATE TABLE t (a TEXT, b INTEGER)", &[])?;
        assert_eq!(
            lite.exec("INSERT INTO t VALUES (?1, ?2)", vals!["x", 7_i64])?,
            1
        );
        lite.exec(
            "INSERT INTO t VALUES (?1, ?2)",
            vals![None::<&str>, None::<i64>],
        )?;
        let rows = lite.rows(&format!("SELECT a, b FROM t ORDER BY {}", lite.seq()), &[])?;
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].text(0), rows[0].int(1)), ("x".to_string(), 7));
        assert_eq!((rows[1].opt_text(0), rows[1].opt_int(1)), (None, None));
        Ok(())
    }
}
