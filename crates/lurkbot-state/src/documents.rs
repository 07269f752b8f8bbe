//! Documents and logs: the home's JSON files and append-only JSON-lines logs, kept in the store
//! when the state is in PostgreSQL (ARCHITECTURE.md §6.3), so gateways on several machines read
//! and change one copy. A document is named by its path in the home (`cron/jobs.json`) and
//! changed only by [`Store::edit_document`]: read, changed and written back in one transaction
//! under the store's write lock, with the log lines the change appends (`cron/runs/<id>.jsonl`),
//! so no change is lost to another made at once on another gateway.
//!
//! A log's lines keep the byte offset where each ends, as if the log were its file (each line
//! and a newline): a transcript's length and "the lines after byte N" (a resumed turn's own)
//! mean the same in the store as in the file.

use crate::sql::{Sql, vals};
use crate::{StateError, Store};

/// What an edit of a document does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edit<R> {
    /// The document's new body, or `None` to leave it as it is.
    pub body: Option<String>,
    /// Lines appended to logs in the same transaction: (the log's name, the line).
    pub lines: Vec<(String, String)>,
    /// What the edit answers its caller.
    pub value: R,
}

impl<R> Edit<R> {
    /// An edit that writes `body` as the document's new body, appends nothing, and answers
    /// `value` (what most edits are: read, change, write back).
    pub fn replace(body: String, value: R) -> Self {
        Self {
            body: Some(body),
            lines: Vec::new(),
            value,
        }
    }
}

impl Store {
    /// The body of document `name`, if there is one.
    ///
    /// # Errors
    /// Store failures.
    pub fn document(&self, name: &str) -> Result<Option<String>, StateError> {
        let name = name.to_string();
        self.read(move |sql| read_document(sql, &name))
    }

    /// The version of document `name` (each write adds one), if there is one: a cheap look
    /// for whether another gateway changed it.
    ///
    /// # Errors
    /// Store failures.
    pub fn document_version(&self, name: &str) -> Result<Option<i64>, StateError> {
        let name = name.to_string();
        self.read(move |sql| {
            let row = sql.row("SELECT version FROM documents WHERE name = ?1", vals![name])?;
            Ok(row.map(|r| r.int(0)))
        })
    }

    /// Reads document `name` (`None` when there is none), lets `f` change it, and writes back
    /// what `f` says with its log lines — one transaction under the write lock. What `f`
    /// answered, or its error (then nothing is written).
    ///
    /// # Errors
    /// Store failures.
    pub fn edit_document<R: Send + 'static, E: Send + 'static>(
        &self,
        name: &str,
        f: impl FnOnce(Option<String>) -> Result<Edit<R>, E> + Send + 'static,
    ) -> Result<Result<R, E>, StateError> {
        self.edit_document_with(name, true, f)
    }

    /// [`Store::edit_document`] for a document that is one value: `parse` reads the body
    /// (`None`: there is none yet), `change` changes the value, `write` makes the new body.
    /// What `change` answered beside the value as written, or the first error (then nothing
    /// is written).
    ///
    /// # Errors
    /// Store failures.
    pub fn edit_value<T, R, E>(
        &self,
        name: &str,
        parse: impl FnOnce(Option<String>) -> Result<T, E> + Send + 'static,
        change: impl FnOnce(&mut T) -> Result<R, E> + Send + 'static,
        write: impl FnOnce(&T) -> Result<String, E> + Send + 'static,
    ) -> Result<Result<(R, T), E>, StateError>
    where
        T: Send + 'static,
        R: Send + 'static,
        E: Send + 'static,
    {
        self.edit_document(name, move |text| {
            let mut value = parse(text)?;
            let answer = change(&mut value)?;
            let body = write(&value)?;
            Ok(Edit::replace(body, (answer, value)))
        })
    }

    /// [`Store::edit_document`]; `durable = false` does not wait for the disk (what a crash of
    /// the database host may lose: counters for display).
    ///
    /// # Errors
    /// Store failures.
    pub fn edit_document_with<R: Send + 'static, E: Send + 'static>(
        &self,
        name: &str,
        durable: bool,
        f: impl FnOnce(Option<String>) -> Result<Edit<R>, E> + Send + 'static,
    ) -> Result<Result<R, E>, StateError> {
        let name = name.to_string();
        self.transaction(durable, move |tx| {
            let body = read_document(tx, &name)?;
            let edit = match f(body) {
                Ok(edit) => edit,
                Err(e) => return Ok(Err(e)),
            };
            if let Some(body) = &edit.body {
                write_document(tx, &name, body)?;
            }
            for (log, line) in &edit.lines {
                append(tx, log, line)?;
            }
            Ok(Ok(edit.value))
        })
    }

    /// Appends `line` to log `log`.
    ///
    /// # Errors
    /// Store failures.
    pub fn append_log(&self, log: &str, line: &str) -> Result<(), StateError> {
        self.append_log_lines(log, vec![line.to_string()], true)
            .map(drop)
    }

    /// Appends `lines` to log `log`, all or none, waiting for the disk when `durable`; the
    /// log's length before and after, as its file's.
    ///
    /// # Errors
    /// Store failures.
    pub fn append_log_lines(
        &self,
        log: &str,
        lines: Vec<String>,
        durable: bool,
    ) -> Result<(u64, u64), StateError> {
        let log = log.to_string();
        if let crate::Backend::Postgres(pg) = &*self.backend
            && !lines.is_empty()
        {
            return pg.append_log(log, lines, durable);
        }
        self.transaction(durable, move |tx| {
            if lines.is_empty() {
                let end = end_of(tx, &log)?;
                return Ok((end, end));
            }
            let (mut before, mut end) = (None, 0);
            for line in &lines {
                end = append(tx, &log, line)?;
                before.get_or_insert(end.saturating_sub(line.len() as u64 + 1));
            }
            Ok((before.unwrap_or(end), end))
        })
    }

    /// The length of log `log` as a file: its lines' bytes and a newline each (0 when empty).
    ///
    /// # Errors
    /// Store failures.
    pub fn log_len(&self, log: &str) -> Result<u64, StateError> {
        let log = log.to_string();
        self.read(move |sql| end_of(sql, &log))
    }

    /// The lines of log `log` after its first `offset` bytes, oldest first.
    ///
    /// # Errors
    /// Store failures.
    pub fn log_since(&self, log: &str, offset: u64) -> Result<Vec<String>, StateError> {
        let (log, offset) = (log.to_string(), i64::try_from(offset).unwrap_or(i64::MAX));
        self.read(move |sql| {
            let rows = sql.rows(
                "SELECT line FROM log_lines WHERE log = ?1 AND end_offset > ?2 ORDER BY end_offset",
                vals![log, offset],
            )?;
            Ok(rows.into_iter().map(|r| r.text(0)).collect())
        })
    }

    /// Every document whose name starts with `prefix`: (name, body), by name.
    ///
    /// # Errors
    /// Store failures.
    pub fn documents_under(&self, prefix: &str) -> Result<Vec<(String, String)>, StateError> {
        let prefix = prefix.to_string();
        let length = i64::try_from(prefix.chars().count()).unwrap_or(i64::MAX);
        self.read(move |sql| {
            // Only the documents under the prefix are read (others hold whole indexes).
            let rows = sql.rows(
                "SELECT name, body FROM documents WHERE substr(name, 1, ?2) = ?1 ORDER BY name",
                vals![prefix, length],
            )?;
            Ok(rows.into_iter().map(|r| (r.text(0), r.text(1))).collect())
        })
    }

    /// Writes document `name` whole, not waiting for the disk (a record that dies with its
    /// gateway: a pending approval).
    ///
    /// # Errors
    /// Store failures.
    pub fn put_document(&self, name: &str, body: &str) -> Result<(), StateError> {
        let body = body.to_string();
        self.edit_document_with(name, false, move |_| {
            Ok::<_, StateError>(Edit::replace(body, ()))
        })?
    }

    /// Writes (`Some(body)`) or deletes (`None`) several documents in one durable transaction:
    /// all of them or none (a linked device's keys, which must never be half written).
    ///
    /// # Errors
    /// Store failures.
    pub fn write_documents(&self, writes: Vec<(String, Option<String>)>) -> Result<(), StateError> {
        if writes.is_empty() {
            return Ok(());
        }
        self.transaction(true, move |tx| {
            for (name, body) in &writes {
                match body {
                    Some(body) => write_document(tx, name, body)?,
                    None => {
                        tx.exec("DELETE FROM documents WHERE name = ?1", vals![name.clone()])?;
                    }
                }
            }
            Ok(())
        })
    }

    /// Deletes document `name` (nothing when there is none).
    ///
    /// # Errors
    /// Store failures.
    pub fn delete_document(&self, name: &str) -> Result<(), StateError> {
        let name = name.to_string();
        self.read(move |sql| {
            sql.exec("DELETE FROM documents WHERE name = ?1", vals![name])?;
            Ok(())
        })
    }

    /// Deletes log `log`.
    ///
    /// # Errors
    /// Store failures.
    pub fn delete_log(&self, log: &str) -> Result<(), StateError> {
        let log = log.to_string();
        self.read(move |sql| {
            sql.exec("DELETE FROM log_lines WHERE log = ?1", vals![log])?;
            Ok(())
        })
    }

    /// Every line of log `log`, oldest first.
    ///
    /// # Errors
    /// Store failures.
    pub fn log(&self, log: &str) -> Result<Vec<String>, StateError> {
        let log = log.to_string();
        self.read(move |sql| {
            let rows = sql.rows(
                "SELECT line FROM log_lines WHERE log = ?1 ORDER BY end_offset",
                vals![log],
            )?;
            Ok(rows.into_iter().map(|r| r.text(0)).collect())
        })
    }
}

fn read_document(sql: &mut dyn Sql, name: &str) -> Result<Option<String>, StateError> {
    let row = sql.row("SELECT body FROM documents WHERE name = ?1", vals![name])?;
    Ok(row.map(|r| r.text(0)))
}

pub(crate) fn write_document(sql: &mut dyn Sql, name: &str, body: &str) -> Result<(), StateError> {
    sql.exec(
        "INSERT INTO documents (name, version, body, updated_ms) VALUES (?1, 1, ?2, ?3) \
         ON CONFLICT (name) DO UPDATE SET version = documents.version + 1, \
         body = excluded.body, updated_ms = excluded.updated_ms",
        vals![name, body, now()],
    )?;
    Ok(())
}

/// Appends `line` to `log` (inside a transaction under the write lock: its end offset follows
/// the last line's); the log's new length.
pub(crate) fn append(sql: &mut dyn Sql, log: &str, line: &str) -> Result<u64, StateError> {
    let bytes = i64::try_from(line.len())
        .unwrap_or(i64::MAX)
        .saturating_add(1);
    let row = sql.row(
        "INSERT INTO log_lines (log, line, end_offset, created_ms) \
         SELECT ?1, ?2, COALESCE(MAX(end_offset), 0) + ?3, ?4 FROM log_lines WHERE log = ?1 \
         RETURNING end_offset",
        vals![log, line, bytes, now()],
    )?;
    Ok(row.map_or(0, |r| r.ms(0)))
}

fn end_of(sql: &mut dyn Sql, log: &str) -> Result<u64, StateError> {
    let row = sql.row(
        "SELECT COALESCE(MAX(end_offset), 0) FROM log_lines WHERE log = ?1",
        vals![log],
    )?;
    Ok(row.map_or(0, |r| r.ms(0)))
}

fn now() -> i64 {
    i64::try_from(lurkbot_core::now_ms()).unwrap_or(i64::MAX)
}
