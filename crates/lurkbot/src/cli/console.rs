//! What `lurkbot agent` and `lurkbot chat` share: showing a turn's events (text to stdout,
//! tool activity and approval prompts to stderr, or one JSON object per line) and asking the
//! human to approve calls on the terminal.

use std::io::Write;

use lurkbot_agent::DecisionFuture;
use lurkbot_agent::{AgentEvent, ApprovalRequest, Approver, Decision};
use lurkbot_core::printable;
use serde_json::json;

use super::line_reader::LineReader;

/// Shows one event.
pub(crate) fn show(json_mode: bool, event: &AgentEvent) {
    if json_mode {
        line(&event_json(event));
        return;
    }
    let mut err = std::io::stderr();
    match event {
        // Model text and tool data are third-party text: no control sequence reaches the
        // terminal raw (ARCHITECTURE.md §4.4).
        AgentEvent::Text(text) => {
            let _ = crate::run::print_stdout(&printable(text));
        }
        AgentEvent::ToolStart {
            name, arguments, ..
        } => {
            let _ = writeln!(
                err,
                "→ {} {}",
                printable(name),
                printable(&arguments.to_string())
            );
        }
        AgentEvent::ToolEnd {
            name,
            is_error,
            preview,
            ..
        } => {
            let status = if *is_error { "failed" } else { "ok" };
            let _ = writeln!(
                err,
                "← {} {status}: {}",
                printable(name),
                printable(preview)
            );
        }
        AgentEvent::ApprovalPending(request) => {
            let _ = writeln!(
                err,
                "? approval needed for {}: {}\n  ({}) — answer allow-once (y), allow-always (a) or deny (n):",
                printable(&request.tool),
                printable(&request.summary),
                printable(&request.reason)
            );
        }
        AgentEvent::ApprovalResolved { decision, .. } => {
            let _ = writeln!(err, "  decision: {}", decision_name(*decision));
        }
        AgentEvent::Compacted { summarized, kept } => {
            let _ = writeln!(
                err,
                "· compacted: {summarized} older messages summarised, {kept} kept"
            );
        }
    }
}

/// The JSON form of an event (`--json`).
pub(crate) fn event_json(event: &AgentEvent) -> serde_json::Value {
    match event {
        AgentEvent::Text(text) => json!({"type": "text", "text": text}),
        AgentEvent::ToolStart {
            id,
            name,
            arguments,
        } => json!({"type": "tool_start", "id": id, "name": name, "arguments": arguments}),
        AgentEvent::ToolEnd {
            id,
            name,
            is_error,
            preview,
        } => {
            json!({"type": "tool_end", "id": id, "name": name, "is_error": is_error, "preview": preview})
        }
        AgentEvent::ApprovalPending(request) => {
            json!({"type": "approval_pending", "request": request})
        }
        AgentEvent::ApprovalResolved { id, decision } => {
            json!({"type": "approval_resolved", "id": id, "decision": decision})
        }
        AgentEvent::Compacted { summarized, kept } => {
            json!({"type": "compacted", "summarized": summarized, "kept": kept})
        }
    }
}

fn decision_name(decision: Decision) -> &'static str {
    match decision {
        Decision::AllowOnce => "allow-once",
        Decision::AllowAlways => "allow-always",
        Decision::Deny => "deny",
    }
}

/// Writes one JSON line to stdout.
pub(crate) fn line(value: &serde_json::Value) {
    let _ = crate::run::print_stdout(&format!("{value}\n"));
}

/// Asks the human: the next input line is the decision; end of input or an unknown answer
/// denies.
pub(crate) struct AskHuman {
    /// Where answers come from.
    pub(crate) lines: LineReader,
}

impl Approver for AskHuman {
    fn decide<'a>(&'a self, _request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin(async move {
            let answer = self.lines.read("approve? [y/a/n] ").await;
            match answer.map(|a| a.parse::<Decision>()) {
                Some(Ok(decision)) => decision,
                Some(Err(message)) => {
                    let _ = writeln!(std::io::stderr(), "  {message}; denied");
                    Decision::Deny
                }
                None => Decision::Deny,
            }
        })
    }
}
