//! Helpers the LurkBot test suites share, so no test crate reaches into another's folder: a real
//! HTTP/1.1 server on loopback with scripted replies ([`feed_server`]), a real IRC server and a raw client ([`irc_server`]) the Python of the
//! test venv that `scripts/test.sh` makes ([`venv`]) OpenClaw's own CLI ([`openclaw`]) , Telegram, Discord and Slack servers written from their API documentation ([`telegram_server`], [`discord_server`], [`slack_server`]), a real Matrix homeserver ([`synapse`]), a real mail system ([`mail_server`]) and a test CA with `openssl s_server` ([`tls`]). A dev-dependency only; never in the binary.
//! A failure here is a test failure, so panicking on a broken setup is the right answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod discord_server;
pub mod feed_server;
pub mod freezing_proxy;
mod http_request;
pub mod irc_server;
pub mod mail_server;
pub mod matrix_user;
pub mod openclaw;
pub mod ports;
pub mod postgres;
pub mod prosody;
pub mod search_servers;
pub mod signal_cli_fake;
mod signal_rpc;
pub mod signal_server;
mod signal_state;
pub mod slack_server;
pub mod speech_servers;
pub mod synapse;
pub mod telegram_server;
mod telegram_voice;
pub mod tls;
pub mod venv;
mod whatsapp_media;
pub mod whatsapp_server;
mod whatsapp_state;
