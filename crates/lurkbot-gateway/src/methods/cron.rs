//! The `cron.*` methods (OpenClaw's names): `cron.list`, `cron.status`, `cron.add`,
//! `cron.update`, `cron.remove`, `cron.run`, `cron.runs`. Jobs travel in `jobs.json`'s own
//! shape; every change is announced as a `cron` event and wakes the scheduler.

use lurkbot_agent::cron::{CronStore, RunMode, StoreError, job_from_json, patch_job};
use lurkbot_agent::gate::Asker;
use lurkbot_core::now_ms;
use serde_json::{Value, json};

use crate::ops::scheduler::Timers;
use crate::ops::scheduler::{emit, run_and_report};
use crate::protocol::{ErrorCode, MethodError};

fn store_error(e: StoreError) -> MethodError {
    match e {
        StoreError::NotFound(_) => MethodError::new(ErrorCode::NotFound, e.to_string()),
        StoreError::Job(_) => MethodError::invalid(e.to_string()),
        StoreError::Busy(_) => MethodError::new(ErrorCode::Unavailable, e.to_string()),
        other => MethodError::new(ErrorCode::Unavailable, other.to_string()),
    }
}

fn job_id(params: &Value) -> Result<&str, MethodError> {
    params
        .get("jobId")
        .or_else(|| params.get("id"))
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("missing string parameter 'jobId'"))
}

/// `cron.list`.
pub(crate) fn list(state: &Timers) -> Result<Value, MethodError> {
    let jobs = CronStore::open(&state.home).jobs().map_err(store_error)?;
    Ok(json!({"jobs": jobs}))
}

/// `cron.status`: the jobs' count, the next run, the last heartbeat and whether this gateway
/// runs the timers (`scheduler`: `starting`, `running`, `standby`).
pub(crate) fn status(state: &Timers) -> Result<Value, MethodError> {
    let jobs = CronStore::open(&state.home).jobs().map_err(store_error)?;
    let next = jobs
        .iter()
        .filter(|j| j.enabled)
        .filter_map(|j| j.state.next_run_at_ms)
        .min();
    Ok(json!({
        "jobs": jobs.len(),
        "enabled": jobs.iter().filter(|j| j.enabled).count(),
        "nextRunAtMs": next,
        "heartbeat": state.autonomy.last_heartbeat(),
        "scheduler": state.autonomy.scheduler_state(),
    }))
}

/// `cron.add {job}` (or the job's fields as the params themselves).
pub(crate) fn add(state: &Timers, params: &Value) -> Result<Value, MethodError> {
    let fields = match params.get("job").unwrap_or(params) {
        Value::Object(fields) => fields.clone(),
        _ => return Err(MethodError::invalid("cron.add needs a job object")),
    };
    let now = now_ms();
    let job = job_from_json(fields, now, Asker::Owner).map_err(MethodError::invalid)?;
    let job = CronStore::open(&state.home)
        .add(job, now)
        .map_err(store_error)?;
    emit(state, &job.id, "added", None);
    state.autonomy.wake.notify_one();
    Ok(json!({"job": job}))
}

/// `cron.update {jobId, patch}`.
pub(crate) fn update(state: &Timers, params: &Value) -> Result<Value, MethodError> {
    let id = job_id(params)?;
    let Some(Value::Object(patch)) = params.get("patch") else {
        return Err(MethodError::invalid("cron.update needs a patch object"));
    };
    let store = CronStore::open(&state.home);
    let job = patch_job(&store, id, patch, now_ms(), Asker::Owner).map_err(|e| {
        if e.starts_with("no cron job") {
            MethodError::new(ErrorCode::NotFound, e)
        } else {
            MethodError::invalid(e)
        }
    })?;
    emit(state, id, "updated", None);
    state.autonomy.wake.notify_one();
    Ok(json!({"job": job}))
}

/// `cron.remove {jobId}`.
pub(crate) fn remove(state: &Timers, params: &Value) -> Result<Value, MethodError> {
    let id = job_id(params)?;
    CronStore::open(&state.home)
        .remove(id)
        .map_err(store_error)?;
    emit(state, id, "removed", None);
    Ok(json!({"removed": id}))
}

/// `cron.run {jobId, mode?: "force"|"due"}`: runs it now and answers with the run.
pub(crate) async fn run(state: &Timers, params: &Value) -> Result<Value, MethodError> {
    let id = job_id(params)?;
    let mode = match params.get("mode").and_then(Value::as_str) {
        None | Some("force") => RunMode::Force,
        Some("due") => RunMode::Due,
        Some(other) => {
            return Err(MethodError::invalid(format!(
                "mode '{other}' is not force or due"
            )));
        }
    };
    let store = CronStore::open(&state.home);
    if !store
        .jobs()
        .map_err(store_error)?
        .iter()
        .any(|j| j.id == id)
    {
        return Err(store_error(StoreError::NotFound(id.into())));
    }
    match run_and_report(state, &store, id, mode).await {
        Some(report) => Ok(json!({"jobId": id, "ran": true, "run": report.record})),
        None => Ok(json!({"jobId": id, "ran": false})),
    }
}

/// `cron.runs {jobId, limit?}`: the newest runs last.
pub(crate) fn runs(state: &Timers, params: &Value) -> Result<Value, MethodError> {
    let id = job_id(params)?;
    let runs = CronStore::open(&state.home).runs(id).map_err(store_error)?;
    let limit = params
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(runs.len(), |l| usize::try_from(l).unwrap_or(usize::MAX));
    let skip = runs.len().saturating_sub(limit);
    Ok(json!({"jobId": id, "runs": runs[skip..]}))
}
