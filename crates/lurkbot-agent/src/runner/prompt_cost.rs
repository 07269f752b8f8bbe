//! ARCHITECTURE.md §9's prompt cost, measured without calling a model: the first request of a
//! "hello" turn on the main session of a fresh home, and the next request of any session, as
//! [`Agent::turn`] would build them.

use lurkbot_core::{Secrets, SessionKey};
use lurkbot_llm::Message;

use super::{Agent, host_and_os, request_tokens, today, tools_tokens};
use crate::error::AgentError;
use crate::prompt::{PromptInput, bootstrap, build};

/// The budget of that request, in tokens (characters / 4).
pub const PROMPT_BUDGET_TOKENS: u64 = 3_000;

impl Agent {
    /// The estimated input tokens of the first request of a "hello" turn: the system prompt of
    /// a first run (BOOTSTRAP.md included when the workspace has one), the message and the
    /// tools the main session is offered. Nothing is recorded.
    ///
    /// # Errors
    /// An unknown tool profile in the configuration.
    pub fn hello_request_tokens(&self) -> Result<u64, AgentError> {
        self.request_tokens_for(&SessionKey::main(), &[Message::user("hello")], None, true)
    }

    /// The estimated input tokens of the next request on `session` as it stands: the system
    /// prompt, the tools offered and the context kept (the compaction summary and the messages
    /// since), as a turn would send them (`/status` in `lurkbot chat`).
    ///
    /// # Errors
    /// The transcript cannot be read, or an unknown tool profile.
    pub fn next_request_tokens(&self, session: &SessionKey) -> Result<u64, AgentError> {
        let sessions = crate::transcript::Sessions::open(&self.home, session.agent_id());
        let entry = sessions.get_or_create(session)?;
        let context = sessions.context(&entry.session_id)?;
        self.request_tokens_for(
            session,
            &context.messages,
            context.summary.as_deref(),
            false,
        )
    }

    fn request_tokens_for(
        &self,
        session: &SessionKey,
        messages: &[Message],
        summary: Option<&str>,
        first_run: bool,
    ) -> Result<u64, AgentError> {
        let policy = self.policy(session);
        let offered = self.offered_by(&policy)?;
        let secrets = Secrets::load(&self.home);
        let skills = crate::skills::offered(&self.home, &self.config, &secrets);
        let kind = policy.session_kind();
        let files = bootstrap(&self.home, kind, first_run);
        let (host, os) = host_and_os();
        let model = self.failover.primary().to_string();
        let system = build(
            &PromptInput {
                mode: self.config.agent.prompt_mode,
                tools: &offered,
                skills: &skills,
                agent_id: session.agent_id(),
                session: session.as_str(),
                kind,
                model: &model,
                date: &today(),
                host: &host,
                os: &os,
                thinking: &self.thinking,
                sandbox: policy.sandbox,
                summary,
            },
            &files,
        );
        Ok(request_tokens(&system, messages, tools_tokens(&offered)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lurkbot_llm::ToolSpec;

    use super::tools_tokens;

    fn spec(description: &str, parameters: serde_json::Value) -> Arc<ToolSpec> {
        Arc::new(ToolSpec {
            name: "tokens_test_tool".into(),
            description: description.into(),
            parameters,
        })
    }

    /// A spec's figure is kept, and measured again when the spec changed — even where its
    /// description's length and its properties' count stayed the same.
    #[test]
    fn a_changed_spec_is_measured_again() {
        let short = spec(
            "Reads.",
            serde_json::json!({"type": "object", "properties": {"a": {}}}),
        );
        let first = tools_tokens(std::slice::from_ref(&short));
        assert_eq!(tools_tokens(std::slice::from_ref(&short)), first);
        let same_shape = spec(
            "Reads.",
            serde_json::json!({"type": "object", "properties": {"a": {
                "type": "string", "description": "a much longer description of the argument"}}}),
        );
        assert!(tools_tokens(&[same_shape]) > first);
        // A copy equal to the first (another `Arc`) is the first's figure.
        let copy = Arc::new((*short).clone());
        assert_eq!(tools_tokens(&[copy]), first);
    }
}
