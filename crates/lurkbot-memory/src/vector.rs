//! The vector half of the index: sqlite-vec's `vec0` table `chunks_vec` (rowid = chunk id,
//! cosine distance) and the embedding cache `embeddings(model, hash)`, so a chunk whose text is
//! unchanged is never sent to the embedder twice. `meta` names the embedder the vectors came
//! from; another embedder starts the table anew.

use std::collections::{HashMap, HashSet};

use rusqlite::{OptionalExtension, params};

use crate::embed::{BATCH, Embedder};
use crate::error::MemoryError;
use crate::index::MemoryIndex;

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (
  model TEXT NOT NULL,
  hash TEXT NOT NULL,
  vector BLOB NOT NULL,
  PRIMARY KEY (model, hash)
);
";

/// Makes sqlite-vec part of every SQLite connection this process opens from now on.
pub(crate) fn register_sqlite_vec() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: the registration sqlite-vec documents for rusqlite: its entry point has
        // SQLite's extension-init signature, and SQLite calls it for each new connection.
        #[allow(unsafe_code)]
        unsafe {
            rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute::<
                *const (),
                unsafe extern "C" fn(
                    *mut rusqlite::ffi::sqlite3,
                    *mut *mut std::os::raw::c_char,
                    *const rusqlite::ffi::sqlite3_api_routines,
                ) -> std::os::raw::c_int,
            >(
                sqlite_vec::sqlite3_vec_init as *const (),
            )));
        }
    });
}

fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

impl MemoryIndex {
    /// The embedder the vectors in `chunks_vec` came from.
    pub(crate) fn vector_model(&self) -> Result<Option<String>, MemoryError> {
        Ok(self
            .connection()
            .query_row("SELECT value FROM meta WHERE key = 'embedder'", [], |r| {
                r.get(0)
            })
            .optional()?)
    }

    fn has_vector_table(&self) -> Result<bool, MemoryError> {
        Ok(self
            .connection()
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    fn chunk_count(&self) -> Result<usize, MemoryError> {
        Ok(self
            .connection()
            .query_row("SELECT count(*) FROM chunks", [], |r| r.get::<_, i64>(0))?
            as usize)
    }

    /// Chunks that have a vector.
    ///
    /// # Errors
    /// The database failing.
    pub fn vectors(&self) -> Result<usize, MemoryError> {
        if !self.has_vector_table()? {
            return Ok(0);
        }
        Ok(self
            .connection()
            .query_row("SELECT count(*) FROM chunks_vec", [], |r| {
                r.get::<_, i64>(0)
            })? as usize)
    }

    /// Forgets every vector (a rebuild, or another embedder).
    pub(crate) fn drop_vectors(&self) -> Result<(), MemoryError> {
        self.connection().execute_batch(
            "DROP TABLE IF EXISTS chunks_vec; DELETE FROM meta WHERE key = 'embedder';",
        )?;
        Ok(())
    }

    /// Removes the vectors of these chunks.
    pub(crate) fn drop_chunk_vectors(
        tx: &rusqlite::Transaction<'_>,
        ids: &[i64],
    ) -> Result<(), MemoryError> {
        let exists = tx
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        if exists {
            let mut stmt = tx.prepare_cached("DELETE FROM chunks_vec WHERE rowid = ?1")?;
            for id in ids {
                stmt.execute(params![id])?;
            }
        }
        Ok(())
    }

    /// Gives every chunk without a vector one: from the cache when its text was embedded
    /// before, else from `embedder` in batches (each batch cached as it arrives, so a failure
    /// keeps what was paid for). Returns how many texts went to the embedder.
    ///
    /// # Errors
    /// The embedder or the database failing; the keyword index is already up to date then.
    pub(crate) async fn embed_missing(
        &mut self,
        embedder: &dyn Embedder,
    ) -> Result<usize, MemoryError> {
        let model = embedder.id().to_string();
        if self.vector_model()?.as_deref() != Some(model.as_str()) {
            self.drop_vectors()?;
        } else if self.vectors()? == self.chunk_count()? {
            // Every chunk has its vector (deletions remove theirs): nothing to do — the check
            // each search makes stays two counts.
            return Ok(0);
        }
        let present: HashSet<i64> = if self.has_vector_table()? {
            let mut stmt = self.connection().prepare("SELECT rowid FROM chunks_vec")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        } else {
            HashSet::new()
        };
        let missing: Vec<(i64, String)> = {
            let mut stmt = self
                .connection()
                .prepare("SELECT id, hash FROM chunks ORDER BY id")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.filter(|row| row.as_ref().map_or(true, |(id, _)| !present.contains(id)))
                .collect::<Result<_, _>>()?
        };
        let mut cached: HashMap<String, Vec<f32>> = HashMap::new();
        {
            let mut stmt = self
                .connection()
                .prepare_cached("SELECT vector FROM embeddings WHERE model = ?1 AND hash = ?2")?;
            for (_, hash) in &missing {
                if let Some(blob) = stmt
                    .query_row(params![model, hash], |r| r.get::<_, Vec<u8>>(0))
                    .optional()?
                {
                    cached.insert(hash.clone(), from_blob(&blob));
                }
            }
        }
        let mut to_embed: Vec<(String, String)> = Vec::new();
        {
            let mut text_of = self
                .connection()
                .prepare_cached("SELECT text FROM chunks WHERE id = ?1")?;
            let mut queued: HashSet<String> = HashSet::new();
            for (id, hash) in &missing {
                if !cached.contains_key(hash) && queued.insert(hash.clone()) {
                    let text: String = text_of.query_row(params![id], |r| r.get(0))?;
                    to_embed.push((hash.clone(), text));
                }
            }
        }
        for batch in to_embed.chunks(BATCH) {
            let texts: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
            let vectors = embedder.embed(&texts).await?;
            let tx = self.connection_mut().transaction()?;
            for ((hash, _), vector) in batch.iter().zip(vectors) {
                tx.execute(
                    "INSERT OR REPLACE INTO embeddings (model, hash, vector) VALUES (?1, ?2, ?3)",
                    params![model, hash, to_blob(&vector)],
                )?;
                cached.insert(hash.clone(), vector);
            }
            tx.commit()?;
        }
        let tx = self.connection_mut().transaction()?;
        if let Some(dims) = missing
            .first()
            .and_then(|(_, hash)| cached.get(hash))
            .map(Vec::len)
        {
            tx.execute_batch(&format!(
                "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0(embedding float[{dims}] distance_metric=cosine);"
            ))?;
            let mut insert =
                tx.prepare_cached("INSERT INTO chunks_vec (rowid, embedding) VALUES (?1, ?2)")?;
            for (id, hash) in &missing {
                if let Some(vector) = cached.get(hash) {
                    insert.execute(params![id, to_blob(vector)])?;
                }
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder', ?1)",
            params![model],
        )?;
        tx.execute(
            "DELETE FROM embeddings WHERE model != ?1 OR hash NOT IN (SELECT hash FROM chunks)",
            params![model],
        )?;
        tx.commit()?;
        Ok(to_embed.len())
    }

    /// The `k` chunks nearest to `vector` as `(chunk id, cosine similarity)`, best first; none
    /// when the vectors came from another embedder.
    pub(crate) fn nearest(
        &self,
        model: &str,
        vector: &[f32],
        k: usize,
    ) -> Result<Vec<(i64, f64)>, MemoryError> {
        if self.vector_model()?.as_deref() != Some(model) || !self.has_vector_table()? {
            return Ok(Vec::new());
        }
        let mut stmt = self.connection().prepare(
            "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ?1 AND k = ?2 ORDER BY distance",
        )?;
        let rows = stmt.query_map(params![to_blob(vector), k as i64], |r| {
            let distance: f64 = r.get(1)?;
            Ok((r.get(0)?, (1.0 - distance).clamp(0.0, 1.0)))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
