//! ARCHITECTURE.md §9's prompt cost, measured without calling a model: the first request of a
//! "hello" turn on the main session of a fresh home, as [`Agent::turn`] would build it.

use lurkbot_core::{Secrets, SessionKey};
use lurkbot_llm::Message;

use super::{Agent, host_and_os, request_tokens, today, tools_tokens};
use crate::error::AgentError;
use crate::prompt::{PromptInput, SessionKind, bootstrap, build};

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
        let session = SessionKey::main();
        let policy = self.policy(&session);
        let offered = self.offered_by(&policy)?;
        let secrets = Secrets::load(&self.home);
        let skills = crate::skills::offered(&self.home, &self.config, &secrets);
        let files = bootstrap(&self.home, SessionKind::Direct, true);
        let (host, os) = host_and_os();
        let model = self.failover.primary().to_string();
        let system = build(
            &PromptInput {
                mode: self.config.agent.prompt_mode,
                tools: &offered,
                skills: &skills,
                agent_id: session.agent_id(),
                session: session.as_str(),
                kind: SessionKind::Direct,
                model: &model,
                date: &today(),
                host: &host,
                os: &os,
                thinking: &self.thinking,
                sandbox: policy.sandbox,
                summary: None,
            },
            &files,
        );
        Ok(request_tokens(
            &system,
            &[Message::user("hello")],
            tools_tokens(&offered),
        ))
    }
}
