//! `cron`: the agent manages its cron jobs (`list`, `add`, `update`, `remove`, `run`, `runs`)
//! in `cron/jobs.json`'s own JSON shape (OpenClaw's). `run` starts the job in the background
//! (a main-session job would otherwise wait for the very turn that asked for it).

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};
use crate::cron::{CronStore, RunMode, job_from_json, patch_job, run_job};
use crate::gate::Asker;

/// `cron`.
pub(crate) struct CronTool;

impl Tool for CronTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "cron".into(),
            description: "Manage scheduled jobs. add takes job {name, schedule {kind:\"at\", at:\"+20m\"|RFC3339} | {kind:\"every\", everyMs} | {kind:\"cron\", expr, tz}, sessionTarget main (payload {kind:\"systemEvent\", text}) | isolated (payload {kind:\"agentTurn\", message}), delivery? {mode:\"announce\", channel}}; update takes jobId and patch.".into(),
            parameters: schema(r#"{"type": "object", "properties": {
                "action": {"type": "string", "enum": ["list", "add", "update", "remove", "run", "runs"]},
                "jobId": {"type": "string"},
                "job": {"type": "object"},
                "patch": {"type": "object"}},
                "required": ["action"]}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let store = CronStore::open(ctx.home);
            let now = lurkbot_core::now_ms();
            let action = match string_arg(args, "action") {
                Ok(a) => a,
                Err(e) => return e,
            };
            let id = || string_arg(args, "jobId");
            let answer = |v: Value| ToolOutput::ok(v.to_string());
            match action {
                "list" => match store.jobs() {
                    Ok(jobs) => answer(json!(jobs)),
                    Err(e) => ToolOutput::error(e.to_string()),
                },
                "add" => {
                    let Some(Value::Object(fields)) = args.get("job") else {
                        return ToolOutput::error("add needs a job object");
                    };
                    let job = match job_from_json(fields.clone(), now, Asker::Model) {
                        Ok(j) => j,
                        Err(e) => return ToolOutput::error(e),
                    };
                    match store.add(job, now) {
                        Ok(job) => answer(json!(job)),
                        Err(e) => ToolOutput::error(e.to_string()),
                    }
                }
                "update" => {
                    let (id, Some(Value::Object(patch))) = (id(), args.get("patch")) else {
                        return ToolOutput::error("update needs jobId and a patch object");
                    };
                    let Ok(id) = id else {
                        return ToolOutput::error("update needs jobId");
                    };
                    match patch_job(&store, id, patch, now, Asker::Model) {
                        Ok(job) => answer(json!(job)),
                        Err(e) => ToolOutput::error(e),
                    }
                }
                "remove" => match id().map(|id| (id, store.remove(id))) {
                    Ok((id, Ok(()))) => answer(json!({"removed": id})),
                    Ok((_, Err(e))) => ToolOutput::error(e.to_string()),
                    Err(e) => e,
                },
                "runs" => match id().map(|id| store.runs(id)) {
                    Ok(Ok(runs)) => answer(json!(runs)),
                    Ok(Err(e)) => ToolOutput::error(e.to_string()),
                    Err(e) => e,
                },
                "run" => {
                    let id = match id() {
                        Ok(id) => id.to_string(),
                        Err(e) => return e,
                    };
                    let runtime = match ctx.runtime("cron run") {
                        Ok(r) => r.clone(),
                        Err(e) => return e,
                    };
                    if let Err(e) = store.lock_job(&id) {
                        return ToolOutput::error(e.to_string());
                    }
                    let flow = runtime.clone();
                    let job_id = id.clone();
                    runtime.track(
                        ctx.session,
                        Box::pin(async move {
                            let clock = lurkbot_core::now_ms;
                            if let Err(e) =
                                run_job(&*flow, &store, &job_id, RunMode::Force, &clock).await
                            {
                                tracing::warn!(job = job_id.as_str(), error = %e, "cron run failed");
                            }
                        }),
                    );
                    answer(json!({"status": "started", "jobId": id}))
                }
                other => ToolOutput::error(format!(
                    "unknown action '{other}'; use list, add, update, remove, run or runs"
                )),
            }
        })
    }
}
