//! The gateway's tests, one binary: a real gateway on loopback driven by a browser, hostile clients, HTTP, the official OpenAI SDK and the WebSocket protocol.
#![allow(
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod common;

mod autonomy;
mod bounded;
mod browser;
mod browser_panels;
mod canvas_ui;
mod channel_alerts;
mod channel_images;
mod channel_leases;
mod channel_voice;
mod channels;
mod contract;
mod contract_platforms;
mod contract_plugin;
mod contract_servers;
mod devices_on_postgres;
mod discord;
mod email;
mod gateway_tool;
mod hostile;
mod http;
mod inbound_images;
mod irc;
mod markdown_ui;
mod matrix;
mod memory;
mod nodes_wire;
mod openai_sdk;
mod openclaw;
mod openclaw_wire;
mod ops;
mod plugin_xmpp;
mod plugins;
mod plugins_protocol;
mod protocol;
mod signal;
mod slack;
mod stopping;
mod usage;
mod users;
mod users_agent;
mod users_browser;
mod users_channels;
mod users_sign_in;
mod users_ui;
mod voice_ui;
mod whatsapp;
mod whatsapp_media;
