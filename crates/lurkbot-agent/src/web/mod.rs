//! Reading the web (ARCHITECTURE.md §5.2): searches through the configured providers, pages as
//! articles, both cached 15 minutes (bounded) and written to the web log. The tools and
//! `lurkbot search` share these functions.

pub mod article;
mod cache;
pub mod download;
pub mod fetch;
mod log;
pub mod search;

pub use log::WEB_LOG;
