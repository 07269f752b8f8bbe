//! What a run — or a run missed while no gateway ran — does to its job: the next run from its
//! schedule, or after a failure a retry back-off from 30 s doubling to 60 min; after 10 failures
//! in a row the job is disabled with the reason; a `deleteAfterRun` job goes after its first
//! success, an `at` job is disabled once it ran. The store applies these inside one change of
//! the jobs (`store.rs`), with the run's line for the job's log.

use serde::{Deserialize, Serialize};

use super::job::{CronJob, RunStatus};

/// Failures in a row after which a job is disabled.
pub const MAX_CONSECUTIVE_ERRORS: u32 = 10;
/// The first retry delay after a failure, and the longest.
const FIRST_RETRY_MS: u64 = 30_000;
const MAX_RETRY_MS: u64 = 3_600_000;

/// One line of a run log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// When the run started (ms since the epoch).
    pub ts: u64,
    /// How it ended.
    pub status: RunStatus,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: u64,
    /// The session it ran on.
    pub session_key: String,
}

/// The reason a run missed while the gateway was down is logged as skipped.
pub const MISSED: &str =
    "missed while the gateway was down; not run because [cron] catch_up = \"none\"";

/// `[cron] catch_up = "none"`: each enabled job of `jobs` due at `now_ms` is not run — its
/// skipped run goes to `runs` — and waits for its next time after `now_ms` (a one-shot `at` job
/// has none and is disabled). The ids skipped.
pub(super) fn skip_missed(
    jobs: &mut [CronJob],
    runs: &mut Vec<(String, RunRecord)>,
    now_ms: u64,
) -> Vec<String> {
    let mut skipped = Vec::new();
    for job in jobs
        .iter_mut()
        .filter(|j| j.enabled && j.state.next_run_at_ms.is_some_and(|t| t <= now_ms))
    {
        let run = RunRecord {
            ts: now_ms,
            status: RunStatus::Skipped,
            error: Some(MISSED.into()),
            duration_ms: 0,
            session_key: job.session_key(),
        };
        job.state.last_status = Some(RunStatus::Skipped);
        job.state.last_error.clone_from(&run.error);
        job.state.next_run_at_ms = job.schedule.next_after(now_ms).ok().flatten();
        job.enabled = job.state.next_run_at_ms.is_some();
        job.updated_at_ms = now_ms;
        skipped.push(job.id.clone());
        runs.push((job.id.clone(), run));
    }
    skipped
}

/// Moves job `index` of `jobs` on after `run` (see the module documentation): the job as it is
/// now, `None` when it was removed after its run.
pub(super) fn move_on(
    jobs: &mut Vec<CronJob>,
    index: usize,
    run: &RunRecord,
    now_ms: u64,
) -> Option<CronJob> {
    let job = &mut jobs[index];
    job.state.last_run_at_ms = Some(run.ts);
    job.state.last_status = Some(run.status);
    job.updated_at_ms = now_ms;
    match run.status {
        RunStatus::Ok => {
            job.state.consecutive_errors = 0;
            job.state.last_error = None;
            if job.delete_after_run {
                jobs.remove(index);
                return None;
            }
            job.state.next_run_at_ms = job.schedule.next_after(now_ms).ok().flatten();
        }
        RunStatus::Skipped => {
            // Not run (e.g. the session was busy): the next run, or soon for an `at`.
            job.state.last_error.clone_from(&run.error);
            job.state.next_run_at_ms = job
                .schedule
                .next_after(now_ms)
                .ok()
                .flatten()
                .or(Some(now_ms.saturating_add(FIRST_RETRY_MS)));
        }
        RunStatus::Error
            if run
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(crate::usage::BUDGET_EXCEEDED)) =>
        {
            // A cap reached is not the job's fault: it keeps its schedule, and the failures in a
            // row that disable a job do not count it.
            job.state.last_error.clone_from(&run.error);
            job.state.next_run_at_ms = job.schedule.next_after(now_ms).ok().flatten();
        }
        RunStatus::Error => {
            job.state.consecutive_errors += 1;
            let errors = job.state.consecutive_errors;
            let reason = run.error.clone().unwrap_or_else(|| "the run failed".into());
            if errors >= MAX_CONSECUTIVE_ERRORS {
                job.enabled = false;
                job.state.next_run_at_ms = None;
                job.state.last_error = Some(format!(
                    "disabled after {errors} failures in a row; the last: {reason}"
                ));
            } else {
                job.state.last_error = Some(reason);
                let retry = FIRST_RETRY_MS
                    .saturating_mul(1 << (errors - 1).min(20))
                    .min(MAX_RETRY_MS);
                job.state.next_run_at_ms = Some(now_ms.saturating_add(retry));
            }
        }
    }
    // An `at` job that has run has no next run.
    if job.state.next_run_at_ms.is_none() && job.enabled && run.status != RunStatus::Error {
        job.enabled = false;
    }
    Some(job.clone())
}
