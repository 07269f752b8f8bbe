//! Integration tests of the executor with a registry of test commands.
#![allow(
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod archives;
mod cal_caldav;
mod cal_local;
mod crafted;
mod fixtures;
mod radicale;

mod executor;
mod fuzz;
mod interop;
mod protection;
mod rss_feeds;
mod rss_fetching;
mod rss_fuzz;
mod rss_limits;
mod rss_subscriptions;
mod safety;

use lurkbot_test_support::{feed_server, venv as test_venv};
