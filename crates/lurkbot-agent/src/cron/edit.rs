//! Jobs from JSON: what the `cron` tool and the `cron.add`/`cron.update` methods accept — the
//! job's own shape, with defaults for what the store fills in, `sessionTarget` following the
//! payload, `schedule.at` as text (`+20m`, RFC 3339) beside `atMs`, and `every` anchored now.

use serde_json::{Map, Value, json};

use super::{CronJob, CronStore, StoreError, parse_at};
use crate::gate::Asker;

/// A job from JSON fields (the `cron` tool's and `cron.add`'s): defaults for what the store fills in, and `at` as text
/// (`+20m` or RFC 3339) accepted beside `atMs`. `createdBy` is `by`, whatever the fields say.
pub fn job_from_json(
    mut fields: Map<String, Value>,
    now: u64,
    by: Asker,
) -> Result<CronJob, String> {
    fields.insert("id".into(), json!(""));
    fields.insert("createdBy".into(), json!(by));
    fields.entry("enabled").or_insert(json!(true));
    fields.insert("createdAtMs".into(), json!(now));
    fields.insert("updatedAtMs".into(), json!(now));
    fields.remove("state");
    if !fields.contains_key("sessionTarget") {
        let isolated = fields
            .get("payload")
            .and_then(|p| p.get("kind"))
            .and_then(Value::as_str)
            == Some("agentTurn");
        fields.insert(
            "sessionTarget".into(),
            json!(if isolated { "isolated" } else { "main" }),
        );
    }
    if let Some(Value::Object(schedule)) = fields.get_mut("schedule") {
        at_text(schedule, now)?;
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| format!("the job is not in the cron job shape: {e}"))
}

fn at_text(schedule: &mut Map<String, Value>, now: u64) -> Result<(), String> {
    if let Some(text) = schedule
        .get("at")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        let at = parse_at(&text, now).map_err(|e| e.to_string())?;
        schedule.remove("at");
        schedule.insert("atMs".into(), json!(at));
    }
    if schedule.get("kind").and_then(Value::as_str) == Some("every")
        && !schedule.contains_key("anchorMs")
    {
        schedule.insert("anchorMs".into(), json!(now));
    }
    Ok(())
}

/// Applies `patch` (top-level fields of the job; `id`, `createdAtMs`, `createdBy` and `state`
/// are kept) to job `id`; a changed schedule gets a new next run. A job the model changes is
/// the model's from then on (`by`), whoever made it.
///
/// # Errors
/// An unknown job, or a patch that breaks the job's shape or rules (nothing is stored).
pub fn patch_job(
    store: &CronStore,
    id: &str,
    patch: &Map<String, Value>,
    now: u64,
    by: Asker,
) -> Result<CronJob, String> {
    let jobs = store.jobs().map_err(|e| e.to_string())?;
    let Some(job) = jobs.into_iter().find(|j| j.id == id) else {
        return Err(StoreError::NotFound(id.into()).to_string());
    };
    let Value::Object(mut fields) = json!(job) else {
        return Err("the job could not be read".into());
    };
    for (key, value) in patch {
        if ["id", "createdAtMs", "createdBy", "state"].contains(&key.as_str()) {
            continue;
        }
        fields.insert(key.clone(), value.clone());
    }
    if let Some(Value::Object(schedule)) = fields.get_mut("schedule") {
        at_text(schedule, now)?;
    }
    let changed: CronJob = serde_json::from_value(Value::Object(fields))
        .map_err(|e| format!("the patch breaks the job's shape: {e}"))?;
    store
        .update(id, move |job| {
            let schedule_changed = job.schedule != changed.schedule;
            let state = job.state.clone();
            *job = changed;
            job.state = state;
            job.updated_at_ms = now;
            if by == Asker::Model {
                job.created_by = Asker::Model;
            }
            if schedule_changed || job.state.next_run_at_ms.is_none() && job.enabled {
                job.state.next_run_at_ms = job.schedule.next_after(now).ok().flatten();
            }
        })
        .map_err(|e| e.to_string())
}
