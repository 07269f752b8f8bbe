//! Search over the index. Keyword: the query's words (any of them) matched by FTS5 and ranked
//! by its BM25, scored `0.5 + 0.5 × r / (1 + r)` of the BM25 magnitude `r`: every match scores
//! at least 0.5 (like OpenClaw, where any keyword match passes the minimum score — FTS5's IDF is
//! near zero in a corpus of a few files, so BM25 alone would hide them) and better matches
//! rank higher. Hybrid, with an embedder: the nearest chunks by cosine
//! similarity and the keyword matches merged, each scored `0.7 × similarity + 0.3 × keyword`
//! (a chunk missing from one list scores 0 there).

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::embed::Embedder;
use crate::error::MemoryError;
use crate::index::MemoryIndex;

/// Weight of the vector similarity in a hybrid score.
pub const VECTOR_WEIGHT: f64 = 0.7;
/// Weight of the keyword score in a hybrid score.
pub const KEYWORD_WEIGHT: f64 = 0.3;
/// Characters of a chunk shown when it matched by meaning only.
const SNIPPET_CHARS: usize = 240;

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

/// A candidate before ranking.
#[derive(Default)]
struct Candidate {
    keyword: f64,
    similarity: f64,
    snippet: Option<String>,
}

impl MemoryIndex {
    /// The best chunks for `query`, at most `max`, none below `min_score`: hybrid when there is
    /// an embedder (the query is embedded first), keyword only otherwise.
    ///
    /// # Errors
    /// The database or the embedder failing.
    pub async fn search(
        &mut self,
        query: &str,
        embedder: Option<&dyn Embedder>,
        max: usize,
        min_score: f64,
    ) -> Result<Vec<Hit>, MemoryError> {
        let vector = match embedder {
            Some(embedder) if !query.trim().is_empty() => {
                let mut vectors = embedder.embed(&[query.to_string()]).await?;
                vectors.pop().map(|v| (embedder.id().to_string(), v))
            }
            _ => None,
        };
        self.rank(
            query,
            vector.as_ref().map(|(m, v)| (m.as_str(), v.as_slice())),
            max,
            min_score,
        )
    }

    /// [`MemoryIndex::search`] with the query's vector given: `(embedder id, vector)`.
    ///
    /// # Errors
    /// The database failing.
    pub fn rank(
        &self,
        query: &str,
        vector: Option<(&str, &[f32])>,
        max: usize,
        min_score: f64,
    ) -> Result<Vec<Hit>, MemoryError> {
        let max = max.max(1);
        let pool = (max * 4).max(20);
        let mut candidates: HashMap<i64, Candidate> = HashMap::new();
        if let Some(fts) = fts_query(query) {
            let mut stmt = self.connection().prepare_cached(
                "SELECT chunk_id, bm25(chunks_fts), snippet(chunks_fts, 0, '', '', '…', 24)
                 FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY bm25(chunks_fts) LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![fts, pool as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?;
            for row in rows {
                let (id, rank, snippet) = row?;
                let magnitude = rank.abs();
                let entry = candidates.entry(id).or_default();
                entry.keyword = 0.5 + 0.5 * magnitude / (1.0 + magnitude);
                entry.snippet = Some(snippet);
            }
        }
        let hybrid = match vector {
            Some((model, vector)) => {
                let nearest = self.nearest(model, vector, pool)?;
                let any = !nearest.is_empty();
                for (id, similarity) in nearest {
                    candidates.entry(id).or_default().similarity = similarity;
                }
                any
            }
            None => false,
        };
        let mut scored: Vec<(i64, f64, Option<String>)> = candidates
            .into_iter()
            .map(|(id, c)| {
                let score = if hybrid {
                    VECTOR_WEIGHT * c.similarity + KEYWORD_WEIGHT * c.keyword
                } else {
                    c.keyword
                };
                (id, score, c.snippet)
            })
            .filter(|(_, score, _)| *score >= min_score && *score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(max);
        let mut stmt = self
            .connection()
            .prepare_cached("SELECT path, start_line, end_line, text FROM chunks WHERE id = ?1")?;
        let mut hits = Vec::with_capacity(scored.len());
        for (id, score, snippet) in scored {
            let Some((path, start, end, text)) = stmt
                .query_row(params![id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .optional()?
            else {
                continue;
            };
            hits.push(Hit {
                path,
                start_line: start as usize,
                end_line: end as usize,
                score,
                snippet: snippet.unwrap_or_else(|| opening(&text)),
            });
        }
        Ok(hits)
    }
}

/// The first characters of a chunk, ended with `…` when cut.
fn opening(text: &str) -> String {
    let mut out: String = text.trim().chars().take(SNIPPET_CHARS).collect();
    if text.trim().chars().count() > SNIPPET_CHARS {
        out.push('…');
    }
    out
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

    #[test]
    fn a_long_chunk_opens_with_an_ellipsis() {
        assert_eq!(opening("  short  "), "short");
        let long = "x".repeat(SNIPPET_CHARS + 5);
        assert_eq!(opening(&long).chars().count(), SNIPPET_CHARS + 1);
    }
}
