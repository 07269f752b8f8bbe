//! Keyword search over the index: the query's words (any of them) matched by FTS5 and ranked by
//! its BM25, turned into a score in (0, 1) (`r / (1 + r)` of the BM25 magnitude) so a minimum
//! score means the same for every query. Vector ranking joins it with the embedders.

use rusqlite::params;
use serde::Serialize;

use crate::error::MemoryError;
use crate::index::MemoryIndex;

/// One result (`memory_search`, `lurkbot memory search --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// Workspace-relative file.
    pub path: String,
    /// First line of the chunk.
    pub start_line: usize,
    /// Last line of the chunk.
    pub end_line: usize,
    /// In (0, 1); higher is better.
    pub score: f64,
    /// The matching part of the chunk.
    pub snippet: String,
}

/// The FTS5 query for free text: each word quoted (so no character is syntax), any may match.
fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"", w.replace('"', "")))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

impl MemoryIndex {
    /// The best chunks for `query`, at most `max`, none below `min_score`.
    ///
    /// # Errors
    /// The database failing.
    pub fn search(&self, query: &str, max: usize, min_score: f64) -> Result<Vec<Hit>, MemoryError> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.connection().prepare(
            "SELECT c.path, c.start_line, c.end_line, bm25(chunks_fts),
                    snippet(chunks_fts, 0, '', '', '…', 24)
             FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.chunk_id
             WHERE chunks_fts MATCH ?1 ORDER BY bm25(chunks_fts) LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![fts, max.max(1) as i64], |r| {
            let rank: f64 = r.get(3)?;
            let magnitude = rank.abs();
            Ok(Hit {
                path: r.get(0)?,
                start_line: r.get::<_, i64>(1)? as usize,
                end_line: r.get::<_, i64>(2)? as usize,
                score: magnitude / (1.0 + magnitude),
                snippet: r.get(4)?,
            })
        })?;
        let hits: Vec<Hit> = rows.collect::<Result<_, _>>()?;
        Ok(hits.into_iter().filter(|h| h.score >= min_score).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_words_only() {
        assert_eq!(
            fts_query("deploy-key \"x\" OR (y)*").as_deref(),
            Some("\"deploy-key\" OR \"x\" OR \"OR\" OR \"y\"")
        );
        assert_eq!(fts_query(" ;; "), None);
    }
}
