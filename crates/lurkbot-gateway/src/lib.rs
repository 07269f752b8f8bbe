//! LurkBot's gateway (ARCHITECTURE.md §6): one port serving the WebSocket protocol at `/ws`, the
//! OpenAI-compatible HTTP API, webhooks, `GET /health` and the embedded web UI, over a session
//! host that keeps each session's agent and running turn.

mod accept;
mod auth;
mod autonomy;
mod bounds;
mod browser_methods;
mod channel_adapters;
mod channel_handle;
mod channel_inbound;
mod channel_lease;
mod channel_live;
mod channel_media;
mod channel_methods;
mod channel_receive;
mod channel_set;
mod channel_voice;
mod channels;
mod client_presence;
mod credentials;
mod cron_methods;
pub mod devices;
mod drain;
mod durable;
mod forwarded;
mod gateway_control;
mod highlight;
mod hooks;
mod host;
mod host_events;
mod http;
mod hub;
mod idempotency;
mod inbound_images;
mod irc_forward;
mod markdown;
mod members;
mod memory_watch;
mod method;
mod methods;
pub mod metrics;
mod node_control;
mod node_link;
mod node_methods;
pub mod nodes;
mod openai;
mod openclaw;
mod ops;
pub mod otel;
mod outbox;
pub mod protocol;
mod ready;
mod reload;
mod run;
mod runtime;
mod scheduler;
mod server;
mod shared_approvals;
mod shared_events;
mod shared_skills;
mod shutdown;
mod sign_in;
mod slots;
mod standing;
mod state;
mod status;
pub mod tenants;
mod turn_frames;
mod ui;
mod usage_methods;
mod user_methods;
pub mod users;
mod ws;
mod ws_writer;

pub use accept::{HEADER_TIMEOUT, IDLE_TIMEOUT};
pub use auth::{
    FailureLimiter, MAX_FAILURES, MAX_GLOBAL_FAILURES, WINDOW, host_allowed, origin_allowed,
    token_matches,
};
pub use autonomy::Autonomy;
pub use host::{RunEnd, SessionHost, TurnOptions};
pub use reload::{ReloadError, ReloadPlan};
pub use runtime::HostRuntime;
pub use server::{StartError, check_safe, router, serve};
pub use state::{AppState, ReloadHook};
pub use ws::PRE_CONNECT_MAX;
