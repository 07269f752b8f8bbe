//! `session_status`, `sessions_list`, `sessions_history`: what the agent may know about its
//! sessions. A group or topic session sees only itself (ARCHITECTURE.md §4.6): the owner's direct
//! conversations are never shown to a group.

use lurkbot_llm::{Role, ToolSpec};
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema};
use crate::transcript::Entry;

/// `session_status`.
pub(crate) struct SessionStatusTool;

impl Tool for SessionStatusTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "session_status".into(),
            description: "This session's key, id, model, token usage and turns.".into(),
            parameters: schema(r#"{"type": "object", "properties": {}}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, _args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            ToolOutput::ok(
                json!({
                    "session_key": ctx.entry.key,
                    "session_id": ctx.entry.session_id,
                    "model": ctx.entry.model,
                    "usage": ctx.entry.usage,
                    "turns": ctx.entry.turns,
                    "now_ms": lurkbot_core::now_ms(),
                })
                .to_string(),
            )
        })
    }
}

/// `sessions_list`.
pub(crate) struct SessionsListTool;

impl Tool for SessionsListTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "sessions_list".into(),
            description: "List this agent's sessions (key, id, last activity, turns).".into(),
            parameters: schema(r#"{"type": "object", "properties": {}}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, _args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            match ctx.sessions.list() {
                Ok(all) => ToolOutput::ok(
                    Value::Array(all.values().filter(|e| visible(ctx, &e.key)).map(|e| json!({
                        "key": e.key, "session_id": e.session_id, "updated_ms": e.updated_ms, "turns": e.turns})).collect())
                    .to_string(),
                ),
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
    }
}

/// Whether the calling session may see session `key`: always its own; a session of someone
/// other than the owner (a group, a topic, a paired third party's messages) nothing else.
fn visible(ctx: &ToolCtx<'_>, key: &str) -> bool {
    key == ctx.session.as_str() || !ctx.others
}

/// `sessions_history`.
pub(crate) struct SessionsHistoryTool;

impl Tool for SessionsHistoryTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "sessions_history".into(),
            description:
                "The last messages (user and assistant text) of one of this agent's sessions."
                    .into(),
            parameters: schema(
                r#"{"type": "object", "properties": {
                "session_key": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 200}},
                "required": ["session_key"]}"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let key = args
                .get("session_key")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let limit = args
                .get("limit")
                .and_then(Value::as_u64)
                .unwrap_or(20)
                .clamp(1, 200);
            let all = match ctx.sessions.list() {
                Ok(all) => all,
                Err(e) => return ToolOutput::error(e.to_string()),
            };
            let Some(entry) = all.get(key).filter(|_| visible(ctx, key)) else {
                return ToolOutput::error(format!(
                    "no session '{key}'; sessions_list shows the keys"
                ));
            };
            let history = match ctx.sessions.history(&entry.session_id) {
                Ok(h) => h,
                Err(e) => return ToolOutput::error(e.to_string()),
            };
            let texts: Vec<Value> = history
                .iter()
                .filter_map(|e| match e {
                    Entry::Message { message, .. }
                        if message.role != Role::Tool && !message.content.is_empty() =>
                    {
                        Some(json!({"role": message.role, "text": message.content}))
                    }
                    _ => None,
                })
                .collect();
            let start = texts
                .len()
                .saturating_sub(usize::try_from(limit).unwrap_or(20));
            ToolOutput::ok(Value::Array(texts[start..].to_vec()).to_string())
        })
    }
}
