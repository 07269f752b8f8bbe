//! LurkBot's long-term memory (ARCHITECTURE.md §7): `workspace/MEMORY.md` and
//! `workspace/memory/*.md` in overlapping chunks with line ranges ([`chunk`]), indexed
//! incrementally in `memory/index.sqlite` ([`MemoryIndex`]) and searched by keyword with FTS5's
//! BM25 ([`Hit`]). Embedders and the vector half of the hybrid ranking are not built yet.

pub mod chunk;
mod error;
mod index;
mod search;

pub use error::MemoryError;
pub use index::{IndexReport, MemoryIndex};
pub use search::Hit;
