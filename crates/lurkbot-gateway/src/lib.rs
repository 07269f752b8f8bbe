//! LurkBot's gateway (ARCHITECTURE.md §6): one port serving the WebSocket protocol at `/ws`, the
//! OpenAI-compatible HTTP API, webhooks, `GET /health` and the embedded web UI, over a session
//! host that keeps each session's agent and running turn.
//!
//! Each folder is one capability: `transport/` (connections), `access/` (who may come in),
//! `methods/` and `openclaw/` (what a connection may ask), `api/` (the HTTP API), `channels/`
//! (the messaging channels' one loop), `turns/` (the session host), `nodes/`, `users/`,
//! `events/`, `ops/`; `state/` composes them, `server.rs` starts them, `protocol/` is the wire.

mod access;
mod api;
mod channels;
mod events;
mod methods;
mod nodes;
mod openclaw;
mod ops;
mod plugins;
pub mod protocol;
mod server;
mod state;
mod transport;
mod turns;
pub mod users;

pub use access::auth::{
    FailureLimiter, MAX_FAILURES, MAX_GLOBAL_FAILURES, WINDOW, host_allowed, origin_allowed,
    token_matches,
};
pub use nodes::devices;
pub use ops::autonomy::Autonomy;
pub use ops::reload::{ReloadError, ReloadPlan};
pub use ops::{metrics, otel};
pub use server::{StartError, check_safe, router, serve};
pub use state::{AppState, ReloadHook};
pub use transport::accept::{HEADER_TIMEOUT, IDLE_TIMEOUT};
pub use transport::ws::PRE_CONNECT_MAX;
pub use turns::host::{RunEnd, SessionHost, TurnOptions};
pub use turns::runtime::HostRuntime;
