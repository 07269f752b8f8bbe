//! `memory/index.sqlite`: the chunks of `workspace/MEMORY.md` and `workspace/memory/*.md` with
//! an FTS5 table over their text. Indexing is incremental by content hash — a file whose size
//! and modification time (nanoseconds) are as last indexed costs one `stat`, one whose text is
//! unchanged a read and a hash, a changed one has its chunks replaced, a deleted one loses them —
//! and runs in one transaction, so a crash leaves the previous index. `rebuild` starts from
//! nothing and gives the same chunks. With an embedder, chunks without a vector then get one
//! ([`crate::vector`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use lurkbot_core::{Home, layout};
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::chunk::chunks;
use crate::embed::Embedder;
use crate::error::MemoryError;

/// How long a file must have been unchanged before its size and time stand for its text.
const SETTLED_NS: i64 = 2_000_000_000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS file_stats (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  hash TEXT NOT NULL,
  text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, chunk_id UNINDEXED, tokenize = 'unicode61');
";

/// What an index run did (`lurkbot memory index --json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexReport {
    /// Memory files found.
    pub files: usize,
    /// Chunks in the index afterwards.
    pub chunks: usize,
    /// Files indexed for the first time.
    pub added: usize,
    /// Files whose content changed.
    pub updated: usize,
    /// Files gone from disk, removed from the index.
    pub removed: usize,
    /// The embedder (`none`: keyword search only).
    pub embedder: String,
    /// Texts sent to the embedder this run (chunks whose text was embedded before cost nothing).
    pub embedded: usize,
}

/// The index of one home.
pub struct MemoryIndex {
    conn: Connection,
    workspace: PathBuf,
}

/// Where the index of `home` is: `memory/index.sqlite`, or this gateway's own
/// `memory/index-<gateway>.sqlite` when several share the home over PostgreSQL
/// ([`lurkbot_core::instance`], ARCHITECTURE.md §6.3).
pub fn index_path(home: &Home) -> std::path::PathBuf {
    home.join(layout::MEMORY)
        .join(lurkbot_core::instance::local_name("index.sqlite"))
}

impl MemoryIndex {
    /// Opens (creating) `memory/index.sqlite` of `home` (`memory/index-<gateway>.sqlite` for a
    /// gateway whose state is in PostgreSQL: [`lurkbot_core::instance`]).
    ///
    /// # Errors
    /// The folder or the database failing.
    pub fn open(home: &Home) -> Result<Self, MemoryError> {
        let dir = home.join(layout::MEMORY);
        lurkbot_core::create_private_dir(&dir)?;
        crate::vector::register_sqlite_vec();
        let conn = Connection::open(index_path(home))?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(crate::vector::SCHEMA)?;
        Ok(Self {
            conn,
            workspace: home.join(layout::WORKSPACE),
        })
    }

    /// The memory files, workspace-relative: `MEMORY.md`, then `memory/*.md` by name.
    fn files(&self) -> Vec<String> {
        let mut files = Vec::new();
        if self.workspace.join("MEMORY.md").is_file() {
            files.push("MEMORY.md".to_string());
        }
        let mut daily: Vec<String> = std::fs::read_dir(self.workspace.join("memory"))
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".md"))
                    .map(|name| format!("memory/{name}"))
                    .collect()
            })
            .unwrap_or_default();
        daily.sort();
        files.extend(daily);
        files
    }

    /// Brings the index up to date with the files (from nothing with `rebuild`), then gives
    /// every chunk a vector when there is an embedder.
    ///
    /// # Errors
    /// The database or the embedder failing (the keyword index is up to date even then); a
    /// file that cannot be read is skipped.
    pub async fn index(
        &mut self,
        rebuild: bool,
        embedder: Option<&dyn Embedder>,
    ) -> Result<IndexReport, MemoryError> {
        let mut report = self.index_chunks(rebuild)?;
        if let Some(embedder) = embedder {
            report.embedded = self.embed_missing(embedder).await?;
            report.embedder = embedder.id().to_string();
        }
        Ok(report)
    }

    /// The keyword half of [`MemoryIndex::index`].
    fn index_chunks(&mut self, rebuild: bool) -> Result<IndexReport, MemoryError> {
        let files = self.files();
        let workspace = self.workspace.clone();
        if rebuild {
            self.drop_vectors()?;
        }
        let tx = self.conn.transaction()?;
        if rebuild {
            tx.execute_batch(
                "DELETE FROM chunks; DELETE FROM chunks_fts; DELETE FROM files; DELETE FROM file_stats;",
            )?;
        }
        let mut report = IndexReport {
            files: files.len(),
            embedder: "none".into(),
            ..IndexReport::default()
        };
        let known: HashMap<String, String> = {
            let mut stmt = tx.prepare("SELECT path, hash FROM files")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        let stats: HashMap<String, (i64, i64)> = {
            let mut stmt = tx.prepare("SELECT path, size, mtime_ns FROM file_stats")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?;
            rows.collect::<Result<_, _>>()?
        };
        let on_disk: HashSet<&String> = files.iter().collect();
        for path in known.keys().filter(|p| !on_disk.contains(p)) {
            remove_file(&tx, path)?;
            report.removed += 1;
        }
        for path in &files {
            let stat = stat(&workspace, path);
            if known.contains_key(path) && stat.is_some() && stats.get(path) == stat.as_ref() {
                continue;
            }
            let Some(text) = read(&workspace, path) else {
                continue;
            };
            let hash = hex(&Sha256::digest(text.as_bytes()));
            match known.get(path) {
                Some(old) if *old == hash => {
                    record_stat(&tx, path, stat)?;
                    continue;
                }
                Some(_) => report.updated += 1,
                None => report.added += 1,
            }
            remove_file(&tx, path)?;
            for chunk in chunks(&text) {
                let chunk_hash = hex(&Sha256::digest(chunk.text.as_bytes()));
                tx.execute(
                    "INSERT INTO chunks (path, start_line, end_line, hash, text) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![path, chunk.start_line as i64, chunk.end_line as i64, chunk_hash, chunk.text],
                )?;
                let id = tx.last_insert_rowid();
                tx.execute(
                    "INSERT INTO chunks_fts (text, chunk_id) VALUES (?1, ?2)",
                    params![chunk.text, id],
                )?;
            }
            tx.execute(
                "INSERT INTO files (path, hash) VALUES (?1, ?2)",
                params![path, hash],
            )?;
            record_stat(&tx, path, stat)?;
        }
        report.chunks =
            tx.query_row("SELECT count(*) FROM chunks", [], |r| r.get::<_, i64>(0))? as usize;
        tx.commit()?;
        Ok(report)
    }

    /// Every chunk as `(path, start, end, text)`, in file and line order (for tests and
    /// `--rebuild` comparisons).
    ///
    /// # Errors
    /// The database failing.
    pub fn all_chunks(&self) -> Result<Vec<(String, usize, usize, String)>, MemoryError> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, start_line, end_line, text FROM chunks ORDER BY path, start_line, end_line")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)? as usize,
                r.get::<_, i64>(2)? as usize,
                r.get::<_, String>(3)?,
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn connection_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

fn remove_file(tx: &rusqlite::Transaction<'_>, path: &str) -> Result<(), MemoryError> {
    let ids: Vec<i64> = {
        let mut stmt = tx.prepare_cached("SELECT id FROM chunks WHERE path = ?1")?;
        let rows = stmt.query_map(params![path], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    MemoryIndex::drop_chunk_vectors(tx, &ids)?;
    tx.execute(
        "DELETE FROM chunks_fts WHERE chunk_id IN (SELECT id FROM chunks WHERE path = ?1)",
        params![path],
    )?;
    tx.execute("DELETE FROM chunks WHERE path = ?1", params![path])?;
    tx.execute("DELETE FROM files WHERE path = ?1", params![path])?;
    tx.execute("DELETE FROM file_stats WHERE path = ?1", params![path])?;
    Ok(())
}

/// A memory file's size and modification time in nanoseconds.
fn stat(workspace: &Path, rel: &str) -> Option<(i64, i64)> {
    let meta = std::fs::symlink_metadata(workspace.join(rel)).ok()?;
    let modified = meta.modified().ok()?;
    let ns = modified
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((i64::try_from(meta.len()).ok()?, i64::try_from(ns).ok()?))
}

/// Remembers a file's size and time so the next run can skip reading it — only once the file
/// has been still for [`SETTLED_NS`]: a write in the same clock tick as the one indexed could
/// keep both, so a recent file is always read and hashed (git's "racy" rule).
fn record_stat(
    tx: &rusqlite::Transaction<'_>,
    path: &str,
    stat: Option<(i64, i64)>,
) -> Result<(), MemoryError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    match stat {
        Some((size, mtime)) if mtime.saturating_add(SETTLED_NS) < now => tx.execute(
            "INSERT OR REPLACE INTO file_stats (path, size, mtime_ns) VALUES (?1, ?2, ?3)",
            params![path, size, mtime],
        )?,
        _ => tx.execute("DELETE FROM file_stats WHERE path = ?1", params![path])?,
    };
    Ok(())
}

/// A memory file's text, when it is a readable file inside the home (a link out is skipped).
fn read(workspace: &Path, rel: &str) -> Option<String> {
    let path = workspace.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
