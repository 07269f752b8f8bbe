//! LurkBot's agent: sessions and transcripts, the system prompt, tools behind the layered
//! policy, and the agent loop over the model providers of `lurkbot-llm`.

mod error;
pub mod policy;
pub mod prompt;
mod runner;
pub mod tools;
mod transcript;
pub mod untrusted;

pub use error::AgentError;
pub use runner::{Agent, AgentEvent, MAX_STEPS, TurnOutcome};
pub use transcript::{Entry, SessionEntry, Sessions};
