//! Turns: the session host (each session's agent and running turn), how a turn is asked for
//! and ends, its durable journal and resumption, the agents' runtime (sub-agents, sessions),
//! the host's bounds and the drain. Nothing here sees the gateway's whole state.

pub(crate) mod bounds;
pub(crate) mod drain;
pub(crate) mod durable;
pub(crate) mod frames;
pub(crate) mod host;
mod host_plugins;
pub(crate) mod irc_forward;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod runtime;
pub(crate) mod slots;
pub(crate) mod standing;
