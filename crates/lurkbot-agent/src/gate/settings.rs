//! A change to the home's settings (`config.toml`) is an act of the gate too (ARCHITECTURE.md
//! §5.1, §5.2 `gateway`): the owner changes anything; a model changes only keys that cannot
//! widen what it may do, and only with a human's approval of that very change, every time.
//!
//! The model's keys are a list of what it may change, not of what it may not: a section added
//! later is the owner's until someone decides otherwise. Refused are the keys DESIGN names —
//! `tools`, `network`, `budgets`, `browser`, `channels.*` (`dm_policy`, `allow_from`, and the
//! base URLs its tokens are sent to), `gateway`, `users` — and every other key that grants, spends
//! or sends: `permissions`, `approvals`, `mcp` (processes it would start), `agents`, `bindings`,
//! `session` (which conversations share a transcript), `models` (prices budgets count with),
//! `memory` and `calendar` (URLs data goes to), the heartbeat's `target`, `prompt` and
//! `budget_tokens`, and `agent.subagents`.

use super::{Asker, Verdict};

/// The keys a model may change (a key, or a table whose keys it may all change).
pub const MODEL_SETTINGS: &[&str] = &[
    "agent.model",
    "agent.fallbacks",
    "agent.context_window",
    "agent.reserve_tokens",
    "agent.prompt_mode",
    "agent.max_output_tokens",
    "agent.timezone",
    "heartbeat.enabled",
    "heartbeat.every",
    "heartbeat.active_hours",
    "log.level",
    "log.max_file_bytes",
    "log.keep_files",
];

/// Whether a model may change `key` (with approval).
pub fn model_may_change(key: &str) -> bool {
    MODEL_SETTINGS.iter().any(|allowed| {
        key == *allowed
            || key
                .strip_prefix(allowed)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The verdict on changing `keys`.
pub(super) fn settings(asker: Asker, keys: &[String]) -> Verdict {
    if asker.is_owner() {
        return Verdict::Allow;
    }
    let refused: Vec<&str> = keys
        .iter()
        .map(String::as_str)
        .filter(|k| !model_may_change(k))
        .collect();
    if !refused.is_empty() {
        return Verdict::Refuse(format!(
            "{} {} the owner's to change (it would widen what the agent may do, spend or send); ask the owner, who can run `lurkbot config set`. A model may change: {}",
            refused.join(", "),
            if refused.len() == 1 { "is" } else { "are" },
            MODEL_SETTINGS.join(", ")
        ));
    }
    Verdict::ApproveEach(format!(
        "the model asks to change the gateway's settings: {}",
        keys.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{Act, decide};

    fn verdict(asker: Asker, keys: &[&str]) -> Verdict {
        let keys: Vec<String> = keys.iter().map(|k| (*k).to_string()).collect();
        decide(asker, &Act::Settings { keys: &keys })
    }

    #[test]
    fn a_model_changes_only_listed_keys_and_each_time_with_approval() {
        assert!(matches!(
            verdict(
                Asker::Model,
                &["heartbeat.every", "heartbeat.active_hours.start"]
            ),
            Verdict::ApproveEach(_)
        ));
        for widening in [
            "tools.allow",
            "tools.web.search.brave_url",
            "state.url",
            // Where traces and (unauthenticated) metrics go.
            "otel.endpoint",
            "otel.capture_content",
            "metrics.listen",
            "network.allow_hosts",
            "budgets.daily_tokens",
            "browser.evaluate",
            "channels.telegram.dm_policy",
            "channels.telegram.allow_from",
            "channels.telegram.base_url",
            "gateway.bind",
            "users.enabled",
            "permissions.calendar",
            "approvals.confirm",
            "mcp.servers.x.command",
            // A plugin is the owner's program: the model never enables or configures one.
            "plugins.echo.enabled",
            "plugins.echo.on_failure",
            "plugins.echo.greeting",
            "agents.main.tools.allow",
            "heartbeat.target",
            "heartbeat.prompt",
            "heartbeat.budget_tokens",
            "agent.subagents.max_depth",
            "agent.modelx",
            "models.openai/gpt.input_per_mtok",
            "session.dm_scope",
            "memory.base_url",
            // Where speech and voice notes are sent: a model that could point them elsewhere
            // would read the owner's voice notes.
            "stt.base_url",
            "tts.base_url",
            "tts.elevenlabs_url",
            "tts.espeak_executable",
            "tts.api_key_env",
        ] {
            assert!(
                matches!(
                    verdict(Asker::Model, &["log.level", widening]),
                    Verdict::Refuse(ref r) if r.contains(widening)
                ),
                "{widening} must be refused to a model"
            );
        }
    }
}
