//! Cron jobs (ARCHITECTURE.md §7). So far: their schedules and the computation of the next run
//! ([`Schedule`]); the job store, the runner and the gateway's scheduler build on it.

mod schedule;

pub use schedule::{Schedule, ScheduleError, parse_at, parse_period};
