//! `sessions_spawn`: starts a sub-agent on a task and returns at once (see
//! [`crate::subagent`]); its result comes back as a later turn of this session.

use std::time::Duration;

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};
use crate::subagent::{Cleanup, SpawnArgs, spawn};

/// `sessions_spawn`.
pub(crate) struct SessionsSpawnTool;

impl Tool for SessionsSpawnTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "sessions_spawn".into(),
            description: "Run a sub-agent on a task in the background; its result arrives later as a message here.".into(),
            parameters: schema(r#"{"type": "object", "properties": {
                "task": {"type": "string"},
                "label": {"type": "string"},
                "model": {"type": "string", "description": "provider/model"},
                "thinking": {"type": "string"},
                "runTimeoutSeconds": {"type": "integer"},
                "runBudgetTokens": {"type": "integer"},
                "cleanup": {"type": "string", "enum": ["keep", "delete"]}},
                "required": ["task"]}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let runtime = match ctx.runtime("sessions_spawn") {
                Ok(r) => r.clone(),
                Err(e) => return e,
            };
            let task = match string_arg(args, "task") {
                Ok(t) => t.to_string(),
                Err(e) => return e,
            };
            let limits = &ctx.config.agent.subagents;
            let cleanup = match args.get("cleanup").and_then(Value::as_str) {
                None | Some("keep") => Cleanup::Keep,
                Some("delete") => Cleanup::Delete,
                Some(other) => {
                    return ToolOutput::error(format!("cleanup '{other}' is not keep or delete"));
                }
            };
            let text = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_string);
            let timeout = args
                .get("runTimeoutSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(limits.run_timeout_seconds)
                .max(1);
            let request = SpawnArgs {
                task,
                label: text("label"),
                model: text("model"),
                thinking: text("thinking"),
                run_timeout: Duration::from_secs(timeout),
                budget_tokens: args
                    .get("runBudgetTokens")
                    .and_then(Value::as_u64)
                    .or(limits.run_budget_tokens)
                    .map(|n| n.max(1)),
                cleanup,
            };
            match spawn(runtime, ctx.home, limits, ctx.session, request).await {
                Ok(accepted) => ToolOutput::ok(json!(accepted).to_string()),
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}
