//! Messaging channels (ARCHITECTURE.md §6.1): the owner reaches the agent from the messengers
//! they already use. One [`Channel`] trait (inbound messages, sending within the platform's
//! limits, typing, status), one module per platform, and what every platform shares: who may
//! write ([`access`], with one-time pairing codes in [`pairing`]), which agent and session
//! answer ([`routing`]), and delivery in chunks with the platform's retry policy
//! ([`delivery`]). The gateway runs the configured channels; credentials come from the home's
//! `.env`.

pub mod access;
mod channel;
pub mod chunk;
pub mod credentials;
pub mod delivery;
pub mod discord;
pub mod email;
mod email_body;
mod email_threads;
mod http;
pub mod irc;
pub mod mail_auth;
pub mod matrix;
mod net;
pub mod pairing;
pub mod picture;
pub mod qr;
pub mod routing;
pub mod signal;
pub mod signal_daemon;
mod signal_events;
mod signal_text;
pub mod slack;
mod stale;
pub mod telegram;
pub mod whatsapp;
pub mod whatsapp_linked;
mod whatsapp_text;
mod ws;

pub use channel::{
    BoxFuture, Channel, ChannelError, ChannelStatus, Inbound, LinkState, Media, MediaSource,
    VoiceNote,
};
pub use picture::Picture;
