//! Running one job: under its run lock, a `systemEvent` is the seed's `chat.inject` — appended
//! to the main session at once, with no model call, and queued for the next heartbeat's prompt;
//! with `wakeMode = now` a heartbeat turn follows at once, and its failure never loses the
//! event (it stays in the main session and in the queue). An `agentTurn` runs on
//! `cron:<jobId>` within its timeout. An `announce` delivery sends the reply through the gate
//! with the job's creator as the one who asked. The run is logged and the job's state moved on.

use std::time::Duration;

use lurkbot_core::SessionKey;

use super::after_run::RunRecord;
use super::job::{CronJob, Delivery, Payload, RunStatus, WakeMode};
use super::store::{CronStore, StoreError};
use crate::runtime::{Outbound, Runtime, TurnRequest, finish_within};

/// Longest an `agentTurn` runs when the job sets no `timeoutSeconds`.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 600;

/// Whether a run waits for the job to be due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Only when due (and enabled).
    Due,
    /// Now, whatever its schedule.
    Force,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// The logged run.
    pub record: RunRecord,
    /// The job after it (`None`: deleted after its run).
    pub job: Option<CronJob>,
    /// The reply, when the run produced one.
    pub reply: Option<String>,
}

/// Why a job was not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store failed, the job is unknown or already running.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `RunMode::Due` and the job is not due.
    #[error("cron job '{id}' is not due ({when}); `lurkbot cron run {id} --force` runs it now")]
    NotDue {
        /// The job.
        id: String,
        /// When it is due, in words.
        when: String,
    },
}

/// Runs job `id` (see the module documentation); `now` gives the time.
///
/// # Errors
/// [`RunError`]: nothing was run then.
pub async fn run_job(
    runtime: &dyn Runtime,
    store: &CronStore,
    id: &str,
    mode: RunMode,
    now: &(dyn Fn() -> u64 + Send + Sync),
) -> Result<RunReport, RunError> {
    run_job_reporting(runtime, store, id, mode, now, &|| {}).await
}

/// [`run_job`], calling `started` once the run has its lock and is due (the gateway's
/// `cron` `started` event).
///
/// # Errors
/// As [`run_job`].
pub async fn run_job_reporting(
    runtime: &dyn Runtime,
    store: &CronStore,
    id: &str,
    mode: RunMode,
    now: &(dyn Fn() -> u64 + Send + Sync),
    started_hook: &(dyn Fn() + Send + Sync),
) -> Result<RunReport, RunError> {
    let _lock = store.lock_job(id)?;
    let job = store
        .jobs()?
        .into_iter()
        .find(|j| j.id == id)
        .ok_or_else(|| StoreError::NotFound(id.into()))?;
    let started = now();
    if mode == RunMode::Due {
        let due = job.enabled && job.state.next_run_at_ms.is_some_and(|t| t <= started);
        if !due {
            let when = match (job.enabled, job.state.next_run_at_ms) {
                (false, _) => "it is disabled".to_string(),
                (true, Some(t)) => format!("next run at {}", rfc3339(t)),
                (true, None) => "it has no next run".to_string(),
            };
            return Err(RunError::NotDue {
                id: id.into(),
                when,
            });
        }
    }
    started_hook();
    let session = job.session_key();
    let clock = std::time::Instant::now();
    // A scheduled run is claimed once: its turn's source id names the time it fell due, so a
    // run cut by a restart is attached to (the gateway resumes its turn), never run twice.
    let source = (mode == RunMode::Due).then(|| {
        format!(
            "cron:{}:{}",
            job.id,
            job.state.next_run_at_ms.unwrap_or(started)
        )
    });
    let result = execute(runtime, store, &job, source).await;
    let result = match (result, &job.delivery) {
        (Ok(Some(reply)), Delivery::Announce { channel, to }) => runtime
            .deliver(Outbound {
                channel: channel.clone(),
                to: to.clone(),
                text: reply.clone(),
                from: SessionKey::parse(&session).unwrap_or_else(|_| SessionKey::main()),
                asker: job.created_by,
            })
            .await
            .map(|_| Some(reply))
            .map_err(|e| format!("the reply was not delivered: {e}")),
        (result, _) => result,
    };
    let record = RunRecord {
        ts: started,
        status: if result.is_ok() {
            RunStatus::Ok
        } else {
            RunStatus::Error
        },
        error: result.as_ref().err().cloned(),
        duration_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
        session_key: session,
    };
    let after = store.record(id, &record, now())?;
    Ok(RunReport {
        record,
        job: after,
        reply: result.ok().flatten(),
    })
}

/// The job's work; the reply when a turn ran.
async fn execute(
    runtime: &dyn Runtime,
    store: &CronStore,
    job: &CronJob,
    source: Option<String>,
) -> Result<Option<String>, String> {
    match &job.payload {
        Payload::SystemEvent { text } => {
            let message = format!("[System event from cron job \"{}\"] {text}", job.name);
            let home = store.home();
            // Never written into a turn in progress (it would split a tool call from its
            // result): the runtime waits a running main-session turn out.
            let main = SessionKey::main();
            let injected = tokio::time::timeout(
                Duration::from_secs(DEFAULT_TIMEOUT_SECONDS),
                runtime.inject(&main, &message),
            )
            .await
            .map_err(|_| "the main session stayed busy; the event was not injected".to_string())?;
            injected.map_err(|e| format!("the event was not injected: {e}"))?;
            crate::heartbeat::queue_system_event(home, &message, lurkbot_core::now_ms()).map_err(
                |e| {
                    format!(
                        "the event is in the main session but not queued for the heartbeat: {e}"
                    )
                },
            )?;
            if job.wake_mode == WakeMode::NextHeartbeat {
                return Ok(None);
            }
            let config = lurkbot_core::Config::load(&home.join(lurkbot_core::layout::CONFIG))
                .unwrap_or_default();
            let woke =
                crate::heartbeat::run_heartbeat(runtime, home, &config, lurkbot_core::now_ms())
                    .await;
            match woke.status {
                crate::heartbeat::HeartbeatStatus::Failed => Err(format!(
                    "the event was injected into the main session and waits for the next heartbeat; the wake turn failed: {}",
                    woke.reason.unwrap_or_default()
                )),
                _ => Ok(woke.preview),
            }
        }
        Payload::AgentTurn {
            message,
            model,
            thinking,
            timeout_seconds,
            budget_tokens,
        } => {
            let session = SessionKey::parse(&job.session_key()).map_err(|e| e.to_string())?;
            let handle = runtime
                .start(TurnRequest {
                    session: session.clone(),
                    message: message.clone(),
                    model: model.clone(),
                    thinking: thinking.clone(),
                    one_off: true,
                    budget: budget_tokens.map(|limit| crate::usage::RunBudget {
                        cap: format!("the budgetTokens of cron job {}", job.id),
                        limit,
                        used: 0,
                        daily: false,
                    }),
                    source,
                })
                .await?;
            let timeout = Duration::from_secs(timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS));
            finish_within(runtime, &session, handle, timeout)
                .await
                .map(|done| Some(done.text))
        }
    }
}

/// `ms` since the epoch as RFC 3339 (UTC).
pub fn rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ms.to_string())
}
