//! The agent crate's tests, one binary: the loop, approvals, compaction, the prompt, the protection model through the file tools, and the tools, against the scripted provider over real HTTP.
#![allow(
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod common;

mod agent_loop;
mod approvals;
mod autonomy;
mod browser;
mod compaction;
mod images;
mod prompt;
mod protection;
mod resume;
mod system_events;
mod tools;
mod web;
