//! End-to-end tests of the `lurkbot` binary: a temp home, a cleared environment, real processes.
#![allow(
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod util;

mod agent;
mod approval_restarts;
mod approvals_on_postgres;
mod archive;
mod autonomy;
mod browser;
mod cal;
mod channel_restarts;
mod channels;
mod chat;
mod cli;
mod config;
mod dashboard;
mod delivery_on_postgres;
mod discord_restarts;
mod docs;
mod doctor;
mod exec;
mod gateway;
mod gateway_rooms;
mod gateways_on_one_home;
mod gateways_on_postgres;
mod import;
mod init;
mod irc;
mod limits_on_postgres;
mod logs;
mod mcp;
mod memory;
mod metrics;
mod nodes;
mod nothing_lost;
mod plugin_restarts;
mod plugins;
mod raw_http;
mod restart_loop;
mod rss;
mod search;
mod service;
mod setup;
mod signal_cli;
mod signal_restarts;
mod skills;
mod structure;
mod traces;
mod turn_ends_on_postgres;
mod usage;
mod users;
mod users_on_postgres;
mod whatsapp_keys;
mod whatsapp_restarts;
