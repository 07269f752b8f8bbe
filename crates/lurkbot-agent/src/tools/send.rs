//! `sessions_send` (a turn on another session of the same agent, its reply returned) and
//! `agents_list` (the agents this home configures). A group or topic session may not reach
//! other sessions (ARCHITECTURE.md §4.6).

use std::time::Duration;

use lurkbot_core::SessionKey;
use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};
use crate::runtime::{TurnRequest, finish_within};

/// Seconds `sessions_send` waits for the reply when the call does not say.
const DEFAULT_WAIT_SECONDS: u64 = 120;

/// `sessions_send`.
pub(crate) struct SessionsSendTool;

impl Tool for SessionsSendTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "sessions_send".into(),
            description: "Send a message to another session of this agent and get its reply (timeoutSeconds 0: do not wait).".into(),
            parameters: schema(r#"{"type": "object", "properties": {
                "sessionKey": {"type": "string"},
                "message": {"type": "string"},
                "timeoutSeconds": {"type": "integer", "minimum": 0}},
                "required": ["sessionKey", "message"]}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let runtime = match ctx.runtime("sessions_send") {
                Ok(r) => r.clone(),
                Err(e) => return e,
            };
            let (raw_key, message) =
                match (string_arg(args, "sessionKey"), string_arg(args, "message")) {
                    (Ok(k), Ok(m)) => (k, m.to_string()),
                    (Err(e), _) | (_, Err(e)) => return e,
                };
            let target = match SessionKey::parse(raw_key) {
                Ok(k) => k,
                Err(e) => return ToolOutput::error(e.to_string()),
            };
            if ctx.others {
                return ToolOutput::error(
                    "a group session, or someone else's conversation, cannot send to other sessions (their conversations are private)",
                );
            }
            if &target == ctx.session {
                return ToolOutput::error("this is your own session: answer here instead");
            }
            if target.agent_id() != ctx.session.agent_id() {
                return ToolOutput::error(format!(
                    "session {} belongs to agent '{}'; sessions_send reaches only this agent's ('{}') sessions",
                    target.as_str(),
                    target.agent_id(),
                    ctx.session.agent_id()
                ));
            }
            let wait = args
                .get("timeoutSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_WAIT_SECONDS);
            let handle = match runtime
                .start(TurnRequest::new(target.clone(), message))
                .await
            {
                Ok(h) => h,
                Err(e) => return ToolOutput::error(e),
            };
            if wait == 0 {
                let run_id = handle.run_id.clone();
                runtime.track(
                    ctx.session,
                    Box::pin(async move {
                        let _ = handle.done.await;
                    }),
                );
                return ToolOutput::ok(
                    json!({"status": "accepted", "runId": run_id, "sessionKey": target.as_str()})
                        .to_string(),
                );
            }
            let run_id = handle.run_id.clone();
            match finish_within(&*runtime, &target, handle, Duration::from_secs(wait)).await {
                Ok(done) => ToolOutput::ok(
                    json!({"status": "ok", "runId": run_id, "sessionKey": target.as_str(), "reply": done.text})
                        .to_string(),
                ),
                Err(e) => ToolOutput::error(format!("{}: {e}", target.as_str())),
            }
        })
    }
}

/// `agents_list`.
pub(crate) struct AgentsListTool;

impl Tool for AgentsListTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "agents_list".into(),
            description: "The agents configured in this home (ids usable in session keys).".into(),
            parameters: schema(r#"{"type": "object", "properties": {}}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, _args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let mut ids = vec!["main".to_string()];
            ids.extend(ctx.config.agents.keys().filter(|k| *k != "main").cloned());
            let agents: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "current": id == ctx.session.agent_id()}))
                .collect();
            ToolOutput::ok(Value::Array(agents).to_string())
        })
    }
}
