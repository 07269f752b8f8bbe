//! `nodes`: the paired devices of the gateway the session runs in, and commands sent to them
//! (ARCHITECTURE.md §5.2). `list` and `describe` read; `invoke` forwards one command with a
//! timeout after the gate has decided (`gate::Act::NodeCommand`: a `system.run` needs a human's
//! approval each time unless the owner allowed it for that node). The node's answer is
//! framed as untrusted like every tool result. Offered only in a gateway's sessions once a node is
//! paired.

use lurkbot_llm::ToolSpec;
use serde_json::Value;

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema};
use crate::gate::Asker;

/// `nodes`.
pub(crate) struct NodesTool;

impl Tool for NodesTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "nodes".into(),
            description: "Paired devices: list, describe, invoke {node, command, params}. system.run {command} needs approval.".into(),
            parameters: schema(r#"{"type": "object", "properties": {
                "action": {"type": "string", "enum": ["list", "describe", "invoke"]},
                "node": {"type": "string"},
                "command": {"type": "string"},
                "params": {"type": "object"},
                "timeoutMs": {"type": "integer", "minimum": 1}},
                "required": ["action"]}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(gateway) = ctx.runtime.and_then(|r| r.gateway()) else {
                return ToolOutput::error(
                    "nodes works only in a session of a running gateway (`lurkbot gateway`)",
                );
            };
            match gateway.nodes(ctx.session, args, Asker::Model).await {
                Ok(answer) => ToolOutput::ok(answer.to_string()),
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}
