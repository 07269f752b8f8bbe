//! Cron jobs (ARCHITECTURE.md §7): their schedules and next runs ([`Schedule`]), the job and its
//! rules ([`CronJob`]), and the store with its run logs, retry back-off and auto-disable
//! ([`CronStore`]). The CLI, the `cron` tool and the gateway's scheduler build on these.

mod after_run;
mod edit;
mod job;
mod run;
mod schedule;
mod store;

pub use after_run::{MAX_CONSECUTIVE_ERRORS, MISSED, RunRecord};
pub use edit::{job_from_json, patch_job};
pub use job::{CronJob, Delivery, JobError, JobState, Payload, RunStatus, SessionTarget, WakeMode};
pub use run::{
    DEFAULT_TIMEOUT_SECONDS, RunError, RunMode, RunReport, rfc3339, run_job, run_job_reporting,
};
pub use schedule::{Schedule, ScheduleError, parse_at, parse_period};
pub use store::{CronStore, JobLock, StoreError};
