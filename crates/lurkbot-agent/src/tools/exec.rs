//! `terminal_exec`: runs one whitelisted pseudo-terminal command (no shell, no processes) and
//! returns its envelope. The audit record is written by the executor as for every run.

use lurkbot_llm::ToolSpec;
use lurkbot_term::ExecRequest;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};

/// The `terminal_exec` tool.
pub(crate) struct TerminalExecTool;

impl Tool for TerminalExecTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "terminal_exec".into(),
            description: "Run one command of LurkBot's pseudo-terminal (no shell). Run `help` to list commands and `help <command>` for flags. Writes need --confirm.".into(),
            parameters: schema(r#"{
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "the whole command line, e.g. `rss fetch --name news`"},
                    "stdin": {"type": "string"},
                    "timeout_ms": {"type": "integer", "minimum": 1}
                },
                "required": ["command"]
            }"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let command = match string_arg(args, "command") {
                Ok(c) => c,
                Err(e) => return e,
            };
            let mut request = ExecRequest::new(command);
            request.session = ctx.session.clone();
            request.stdin = args
                .get("stdin")
                .and_then(Value::as_str)
                .map(str::to_string);
            request.timeout_ms = args.get("timeout_ms").and_then(Value::as_u64);
            let envelope = ctx.exec.run(request).await;
            let mut shown = json!({
                "exit_code": envelope.exit_code,
                "stdout": envelope.stdout,
                "stderr": envelope.stderr,
                "error_code": envelope.error_code,
                "result": envelope.result,
                "artifacts": envelope.artifacts,
            });
            // The hints speak to whoever runs the command; what only the human can do is said
            // to the model here, in its own envelope.
            if let Some(note) = envelope.error_code.as_deref().and_then(needs_the_human) {
                shown["note"] = json!(note);
            }
            let text = shown.to_string();
            if envelope.exit_code == 0 {
                ToolOutput::ok(text)
            } else {
                ToolOutput::error(text)
            }
        })
    }
}

/// What the model should do about a refusal only its human can lift.
fn needs_the_human(code: &str) -> Option<&'static str> {
    match code {
        "MissingCredentials" | "PermissionDenied" => {
            Some("Only your human can fix this (the hint says how): ask them; do not retry first.")
        }
        "ConfirmRequired" => Some(
            "Add --confirm only when your human asked for exactly this; ask them when in doubt.",
        ),
        _ => None,
    }
}
