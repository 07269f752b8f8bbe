//! LurkBot's agent: sessions and transcripts, the system prompt, tools behind the layered
//! policy, and the agent loop over the model providers of `lurkbot-llm`.

mod approvals;
mod compaction;
pub mod cron;
mod error;
mod policy;
mod policy_config;
mod prompt;
mod runner;
pub mod setup;
mod skills;
mod tools;
mod transcript;
mod untrusted;

pub use approvals::{
    APPROVALS_FILE, ApprovalRequest, Approvals, Approver, Decision, DecisionFuture, NoHuman,
};
pub use compaction::{MERGE_SUMMARIES_INSTRUCTIONS, SUMMARIZER_SYSTEM};
pub use error::AgentError;
pub use policy::Policy;
pub use policy_config::policy_for;
pub use prompt::{
    BOOTSTRAP_FILES, PromptInput, SessionKind, SkillEntry, TOTAL_MAX_CHARS, bootstrap,
    build as build_system_prompt,
};
pub use runner::{Agent, AgentEvent, MAX_STEPS, THINKING_LEVELS, TurnOutcome};
pub use tools::ToolBox;
pub use transcript::{Context, Entry, SessionEntry, Sessions};
