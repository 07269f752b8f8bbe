//! A turn's span (ARCHITECTURE.md §6.4): `invoke_agent <agent>`, the OpenTelemetry GenAI agent
//! span, opened around every turn — the gateway's (`SessionHost::spawn_run`) and the CLI's
//! ([`crate::LocalRuntime`]) — so model calls, tool calls and gate decisions are its children.

use lurkbot_core::SessionKey;
use lurkbot_core::trace::{Kind, Span};

use crate::TurnOutcome;

/// The span of the turn `run_id` of `key` on `message` (the message only with
/// `capture_content`).
pub fn turn_span(key: &SessionKey, run_id: &str, message: &str) -> Span {
    let mut span = Span::start(format!("invoke_agent {}", key.agent_id()), Kind::Internal);
    if span.recording() {
        span.set("gen_ai.operation.name", "invoke_agent");
        span.set("gen_ai.agent.name", key.agent_id());
        span.set("lurkbot.turn.source", key.source());
        span.set("lurkbot.run_id", run_id);
        span.set_content("gen_ai.input.messages", message);
    }
    span
}

/// What a turn's span records of its end: its steps and tokens (and, with `capture_content`,
/// its reply), or its failure.
pub fn end_turn_span(span: &mut Span, result: Result<&TurnOutcome, &str>) {
    match result {
        Ok(done) => {
            span.set("lurkbot.turn.steps", done.steps as u64);
            span.set("gen_ai.usage.input_tokens", done.usage.input_tokens);
            span.set("gen_ai.usage.output_tokens", done.usage.output_tokens);
            span.set_content("gen_ai.output.messages", &done.text);
        }
        Err(message) => span.fail(message),
    }
}
