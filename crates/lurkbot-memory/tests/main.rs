//! The memory crate's tests, one binary: indexing real files in a temporary home and searching them.
#![allow(
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod hybrid;
mod indexing;
#[cfg(feature = "local")]
mod retrieval;
