//! LurkBot's long-term memory (ARCHITECTURE.md §7): `workspace/MEMORY.md` and
//! `workspace/memory/*.md` in overlapping chunks with line ranges ([`chunk`]), indexed
//! incrementally in `memory/index.sqlite` ([`MemoryIndex`]) with SQLite FTS5 and, when an
//! [`Embedder`] is configured, sqlite-vec; searched by keyword (BM25) or hybrid
//! (0.7 vector + 0.3 keyword) ([`Hit`]).

pub mod chunk;
mod embed;
mod error;
mod index;
#[cfg(feature = "local")]
mod local;
mod recall;
mod search;
mod vector;

pub use embed::{BATCH, EmbedFuture, Embedder, embedder};
pub use error::MemoryError;
pub use index::{IndexReport, MemoryIndex, index_path};
pub use recall::{Recall, recall, reindex};
pub use search::{Hit, KEYWORD_WEIGHT, VECTOR_WEIGHT};
