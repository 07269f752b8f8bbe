//! LurkBot's agent: sessions and transcripts, the system prompt, tools behind the layered
//! policy, and the agent loop over the model providers of `lurkbot-llm`.

pub mod approvals;
pub mod compaction;
mod error;
pub mod policy;
mod policy_config;
pub mod prompt;
mod runner;
pub mod setup;
pub mod skills;
pub mod tools;
mod transcript;
pub mod untrusted;

pub use approvals::{ApprovalRequest, Approver, Decision};
pub use error::AgentError;
pub use policy_config::policy_for;
pub use runner::{Agent, AgentEvent, MAX_STEPS, THINKING_LEVELS, TurnOutcome};
pub use transcript::{Context, Entry, SessionEntry, Sessions};
