//! Operations: metrics and traces, `status` and `/ready`, reloads, the timers (cron and
//! heartbeat), the memory watch, the agent's `gateway` tool, and stopping.

pub(crate) mod autonomy;
pub(crate) mod gateway_control;
pub(crate) mod memory_watch;
pub mod metrics;
pub mod otel;
pub(crate) mod ready;
pub(crate) mod reload;
pub(crate) mod scheduler;
pub(crate) mod shutdown;
pub(crate) mod status;
