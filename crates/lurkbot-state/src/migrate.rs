//! Moving a home's state between backends (`lurkbot state migrate --to <postgres-url | home>`):
//! every turn, inbound record and outbox message, in the order they came, copied in one durable
//! transaction into a store that holds none, and counted on both sides. Leases, budget holds and
//! sign-in attempts are not moved: they belong to running gateways, and none may run while the
//! state moves. Usage records go with them: into PostgreSQL's table (from the home's month files,
//! which the caller reads), or out of it for the caller to write as the home's files.

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
}

/// What [`Store::copy_into`] moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Migrated {
    /// What the target holds now (usage: the records moved).
    pub counts: Counts,
    /// The usage records for the home's month files, oldest first, when the target is the
    /// embedded store (which keeps them there): (ms since the epoch, the record).
    pub usage_for_files: Vec<(u64, String)>,
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
    let usage = sql.row("SELECT COUNT(*) FROM usage", &[])?;
    Ok(Counts {
        turns: n[0],
        inbound: n[1],
        outbox: n[2],
        usage: usage.map_or(0, |r| r.ms(0)),
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
    pub fn copy_into(
        &self,
        target: &Store,
        usage_from_files: Vec<(u64, String)>,
    ) -> Result<Migrated, StateError> {
        let mut usage: Vec<(u64, String)> = self
            .usage_after(0, 0)?
            .into_iter()
            .map(|row| (row.ts_ms, row.record))
            .collect();
        usage.extend(usage_from_files);
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
        source.usage = usage.len() as u64;
        let rows_for_table = if into_table {
            usage.clone()
        } else {
            Vec::new()
        };
        let copied = target.durably(move |tx| {
            let before = count(tx)?;
            if !before.is_empty() {
                return Err(StateError::Migrate(format!(
                    "the target already holds state ({} turns, {} inbound records, {} outbox messages, {} usage records): migrate into an empty store",
                    before.turns, before.inbound, before.outbox, before.usage
                )));
            }
            for (ts, record) in &rows_for_table {
                tx.exec(
                    "INSERT INTO usage (ts_ms, record) VALUES (?1, ?2)",
                    &[
                        Val::Int(i64::try_from(*ts).unwrap_or(i64::MAX)),
                        Val::Text(record.clone()),
                    ],
                )?;
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
                after.usage = source.usage;
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
            usage_for_files: if into_table { Vec::new() } else { usage },
        })
    }
}
