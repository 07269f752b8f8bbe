//! Moving a home's state between backends (`lurkbot state migrate --to <postgres-url | home>`):
//! every turn, inbound record and outbox message, in the order they came, copied in one durable
//! transaction into a store that holds none, and counted on both sides. Leases, budget holds and
//! sign-in attempts are not moved: they belong to running gateways, and none may run while the
//! state moves. Usage records, documents and logs go with them: into PostgreSQL's tables (from
//! the home's files, which the caller reads), or out of them for the caller to write as the
//! home's files.

use crate::sql::{Row, Sql, Val};
use crate::{StateError, Store};

/// The tables moved, with their columns (the same on both backends).
const TABLES: [(&str, &str); 3] = [
    (
        "turns",
        "id, source, session, origin, message, options, state, base, step, tool, reply, error, \
         starts, created_ms, updated_ms",
    ),
    (
        "inbound",
        "source, channel, payload, state, created_ms, updated_ms",
    ),
    (
        "outbox",
        "id, turn, channel, chat, reply_to, kind, body, state, pieces_sent, platform_id, \
         attempts, error, created_ms, updated_ms",
    ),
];

/// How many rows a store holds, table by table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Turns, ended or not.
    pub turns: u64,
    /// Inbound records.
    pub inbound: u64,
    /// Outbox messages.
    pub outbox: u64,
    /// Usage records.
    pub usage: u64,
    /// Documents (`cron/jobs.json`).
    pub documents: u64,
    /// Lines of logs (`cron/runs/*.jsonl`).
    pub log_lines: u64,
}

/// What the home keeps in files on the embedded store and PostgreSQL in tables: what moves
/// with the state between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeFiles {
    /// Usage records, oldest first: (ms since the epoch, the record).
    pub usage: Vec<(u64, String)>,
    /// Documents: (the file's path in the home, its body).
    pub documents: Vec<(String, String)>,
    /// Logs: (the file's path in the home, its lines oldest first).
    pub logs: Vec<(String, Vec<String>)>,
}

impl HomeFiles {
    fn log_lines(&self) -> u64 {
        self.logs.iter().map(|(_, lines)| lines.len() as u64).sum()
    }
}

/// What [`Store::copy_into`] moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Migrated {
    /// What the target holds now (with what was handed back for files).
    pub counts: Counts,
    /// What the home's files are to hold when the target is the embedded store (which keeps
    /// them there); empty for PostgreSQL.
    pub for_files: HomeFiles,
}

impl Counts {
    /// Whether the store holds nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

fn count(sql: &mut dyn Sql) -> Result<Counts, StateError> {
    let mut n = [0u64; 3];
    for (slot, (table, _)) in n.iter_mut().zip(TABLES) {
        let row = sql.row(&format!("SELECT COUNT(*) FROM {table}"), &[])?;
        *slot = row.map_or(0, |r| r.ms(0));
    }
    let mut more = [0u64; 3];
    for (slot, table) in more.iter_mut().zip(["usage", "documents", "log_lines"]) {
        let row = sql.row(&format!("SELECT COUNT(*) FROM {table}"), &[])?;
        *slot = row.map_or(0, |r| r.ms(0));
    }
    Ok(Counts {
        turns: n[0],
        inbound: n[1],
        outbox: n[2],
        usage: more[0],
        documents: more[1],
        log_lines: more[2],
    })
}

/// The usage records, documents and logs in the tables of `sql`.
fn home_files(sql: &mut dyn Sql) -> Result<HomeFiles, StateError> {
    let order = sql.seq();
    let usage = sql
        .rows(
            &format!("SELECT ts_ms, record FROM usage ORDER BY {order}"),
            &[],
        )?
        .into_iter()
        .map(|r| (r.ms(0), r.text(1)))
        .collect();
    let documents = sql
        .rows("SELECT name, body FROM documents ORDER BY name", &[])?
        .into_iter()
        .map(|r| (r.text(0), r.text(1)))
        .collect();
    let mut logs: Vec<(String, Vec<String>)> = Vec::new();
    for row in sql.rows(
        "SELECT log, line FROM log_lines ORDER BY log, end_offset",
        &[],
    )? {
        let (log, line) = (row.text(0), row.text(1));
        match logs.last_mut() {
            Some((last, lines)) if *last == log => lines.push(line),
            _ => logs.push((log, vec![line])),
        }
    }
    Ok(HomeFiles {
        usage,
        documents,
        logs,
    })
}

impl Store {
    /// How many turns, inbound records and outbox messages this store holds.
    ///
    /// # Errors
    /// Store failures.
    pub fn counts(&self) -> Result<Counts, StateError> {
        self.read(count)
    }

    /// Copies every turn, inbound record and outbox message of this store into `target`,
    /// which must hold none, in one durable transaction, with the usage records — this store's
    /// and `usage_from_files` (the home's month files, when this is the embedded store) — into
    /// a PostgreSQL target's table, or handed back for the home's files; the counts, checked
    /// equal on both sides after the copy.
    ///
    /// # Errors
    /// [`StateError::Migrate`]: the target is not empty, or its counts differ after the copy
    /// (nothing is kept then); store failures.
    pub fn copy_into(&self, target: &Store, from_files: HomeFiles) -> Result<Migrated, StateError> {
        let mut files = self.read(home_files)?;
        files.usage.extend(from_files.usage);
        files.documents.extend(from_files.documents);
        files.logs.extend(from_files.logs);
        let into_table = target.backend() == "postgres";
        let tables: Vec<Vec<Row>> = self.read(|sql| {
            TABLES
                .iter()
                .map(|(table, columns)| {
                    let order = sql.seq();
                    sql.rows(
                        &format!("SELECT {columns} FROM {table} ORDER BY {order}"),
                        &[],
                    )
                })
                .collect()
        })?;
        let mut source = self.counts()?;
        source.usage = files.usage.len() as u64;
        source.documents = files.documents.len() as u64;
        source.log_lines = files.log_lines();
        let for_table = if into_table {
            files.clone()
        } else {
            HomeFiles::default()
        };
        let copied = target.durably(move |tx| {
            let before = count(tx)?;
            if !before.is_empty() {
                return Err(StateError::Migrate(format!(
                    "the target already holds state ({} turns, {} inbound records, {} outbox messages, {} usage records): migrate into an empty store",
                    before.turns, before.inbound, before.outbox, before.usage
                )));
            }
            for (ts, record) in &for_table.usage {
                tx.exec(
                    "INSERT INTO usage (ts_ms, record) VALUES (?1, ?2)",
                    &[
                        Val::Int(i64::try_from(*ts).unwrap_or(i64::MAX)),
                        Val::Text(record.clone()),
                    ],
                )?;
            }
            for (name, body) in &for_table.documents {
                crate::documents::write_document(tx, name, body)?;
            }
            for (log, lines) in &for_table.logs {
                for line in lines {
                    crate::documents::append(tx, log, line)?;
                }
            }
            for ((table, columns), rows) in TABLES.iter().zip(tables) {
                let width = columns.split(',').count();
                let marks: Vec<String> = (1..=width).map(|i| format!("?{i}")).collect();
                let insert = format!(
                    "INSERT INTO {table} ({columns}) VALUES ({})",
                    marks.join(", ")
                );
                for row in rows {
                    let mut values: Vec<Val> = row.0;
                    values.resize(width, Val::Null);
                    tx.exec(&insert, &values)?;
                }
            }
            let mut after = count(tx)?;
            if !into_table {
                (after.usage, after.documents, after.log_lines) =
                    (source.usage, source.documents, source.log_lines);
            }
            if after != source {
                return Err(StateError::Migrate(format!(
                    "the copy holds {after:?}, the source {source:?}: nothing was kept"
                )));
            }
            Ok(after)
        })?;
        Ok(Migrated {
            counts: copied,
            for_files: if into_table {
                HomeFiles::default()
            } else {
                files
            },
        })
    }
}
