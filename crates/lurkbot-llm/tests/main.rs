//! The provider tests, one binary: both wire formats against the scripted server, and (ignored unless asked) a real llama-server.
#![allow(
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod embeddings;
mod llama_server;
mod providers;
