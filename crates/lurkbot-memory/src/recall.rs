//! The two operations every caller (the CLI, the tools, the gateway's watcher) needs, with the
//! configured embedder: bring the index up to date, and search it. A failing embedder never
//! loses a search: it falls back to keyword search and says why.

use lurkbot_core::{Home, MemoryConfig};

use crate::embed::embedder;
use crate::error::MemoryError;
use crate::index::{IndexReport, MemoryIndex};
use crate::search::Hit;

/// What a search found, and why it was keyword only when an embedder was configured.
#[derive(Debug, Clone)]
pub struct Recall {
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// Set when the embedder failed and the hits come from keyword search alone.
    pub degraded: Option<String>,
}

/// Brings `memory/index.sqlite` up to date (from nothing with `rebuild`) with the configured
/// embedder. `vars` reads provider variables (see [`embedder`]).
///
/// # Errors
/// The database or the embedder failing (the keyword index is up to date even then).
pub async fn reindex(
    home: &Home,
    config: &MemoryConfig,
    vars: &(dyn Fn(&str) -> Option<String> + Sync),
    rebuild: bool,
) -> Result<IndexReport, MemoryError> {
    let embedder = embedder(home, config, vars)?;
    let mut index = MemoryIndex::open(home)?;
    index.index(rebuild, embedder.as_deref()).await
}

/// Brings the index up to date, then searches it: hybrid with the configured embedder, keyword
/// only without one or when it fails.
///
/// # Errors
/// The database failing.
pub async fn recall(
    home: &Home,
    config: &MemoryConfig,
    vars: &(dyn Fn(&str) -> Option<String> + Sync),
    query: &str,
    max: usize,
    min_score: f64,
) -> Result<Recall, MemoryError> {
    let mut index = MemoryIndex::open(home)?;
    let embedder = match embedder(home, config, vars) {
        Ok(e) => e,
        Err(e) => {
            index.index(false, None).await?;
            let hits = index.search(query, None, max, min_score).await?;
            return Ok(Recall {
                hits,
                degraded: Some(e.to_string()),
            });
        }
    };
    let hybrid = match index.index(false, embedder.as_deref()).await {
        Ok(_) => {
            index
                .search(query, embedder.as_deref(), max, min_score)
                .await
        }
        Err(e) => Err(e),
    };
    match hybrid {
        Ok(hits) => Ok(Recall {
            hits,
            degraded: None,
        }),
        Err(e @ MemoryError::Embedder { .. }) => Ok(Recall {
            hits: index.search(query, None, max, min_score).await?,
            degraded: Some(e.to_string()),
        }),
        Err(e) => Err(e),
    }
}
