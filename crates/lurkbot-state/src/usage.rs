//! Usage records in the store (ARCHITECTURE.md §7c): on PostgreSQL every model call's record
//! is a row — its time and the record as the month files hold it (one JSON object) — so that
//! every gateway's budgets and `usage` read the same figures without a shared filesystem. The
//! embedded store has the table too but the home's `usage/*.jsonl` files stay the records
//! there.

use crate::sql::{Sql, vals};
use crate::{StateError, Store};

/// One stored usage record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    /// Its place in the order records came in (for reading on from it).
    pub seq: i64,
    /// When, ms since the epoch.
    pub ts_ms: u64,
    /// The record (JSON).
    pub record: String,
}

impl Store {
    /// Appends a usage record made at `ts_ms` (committed before the call's hold ends).
    ///
    /// # Errors
    /// Store failures.
    pub fn append_usage(&self, ts_ms: u64, record: &str) -> Result<(), StateError> {
        let (ts, record) = (clamp(ts_ms), record.to_string());
        // As the month files are appended to: not waiting for the disk.
        self.read(move |sql| {
            sql.exec(
                "INSERT INTO usage (ts_ms, record) VALUES (?1, ?2)",
                vals![ts, record],
            )?;
            Ok(())
        })
    }

    /// [`Store::append_usage`] unless the same record (its time and every figure) is stored
    /// already: a deferred record written again after a crash is not counted twice. Committed
    /// durably: a record that already waited for the store is not left to an unflushed commit.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn append_usage_once(&self, ts_ms: u64, record: &str) -> Result<(), StateError> {
        let (ts, record) = (clamp(ts_ms), record.to_string());
        self.durably(move |sql| {
            let known = sql.row(
                "SELECT 1 FROM usage WHERE ts_ms = ?1 AND record = ?2",
                vals![ts, &record],
            )?;
            if known.is_none() {
                sql.exec(
                    "INSERT INTO usage (ts_ms, record) VALUES (?1, ?2)",
                    vals![ts, record],
                )?;
            }
            Ok(())
        })
    }

    /// The records after `seq` (0: all) made at `since_ms` or later, in the order they came.
    ///
    /// # Errors
    /// Store failures.
    pub fn usage_after(&self, seq: i64, since_ms: u64) -> Result<Vec<UsageRow>, StateError> {
        self.read(move |sql| rows_after(sql, seq, since_ms))
    }
}

/// [`Store::usage_after`] inside a transaction.
pub(crate) fn rows_after(
    sql: &mut dyn Sql,
    seq: i64,
    since_ms: u64,
) -> Result<Vec<UsageRow>, StateError> {
    let order = sql.seq();
    let rows = sql.rows(
        &format!(
            "SELECT {order}, ts_ms, record FROM usage WHERE {order} > ?1 AND ts_ms >= ?2 \
             ORDER BY {order}"
        ),
        vals![seq, clamp(since_ms)],
    )?;
    Ok(rows
        .into_iter()
        .map(|r| UsageRow {
            seq: r.int(0),
            ts_ms: r.ms(1),
            record: r.text(2),
        })
        .collect())
}

fn clamp(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}
