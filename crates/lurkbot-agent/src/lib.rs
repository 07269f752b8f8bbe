//! LurkBot's agent: sessions and transcripts, the system prompt, tools behind the layered
//! policy, and the agent loop over the model providers of `lurkbot-llm`.

mod approvals;
pub mod canvas;
mod compaction;
pub mod cron;
mod error;
pub mod gate;
pub mod heartbeat;
pub mod images;
pub mod import;
pub mod journal;
mod local_runtime;
pub mod mcp;
mod outcome;
mod policy;
mod policy_config;
mod prompt;
mod runner;
mod runtime;
mod session_index;
mod session_kind;
mod session_notes;
pub mod setup;
pub mod shared_state;
pub mod skills;
pub mod speech;
mod subagent;
mod subagents;
mod tool_hook;
mod tool_names;
mod tools;
mod transcript;
mod transcript_context;
pub mod turn_trace;
mod untrusted;
pub mod usage;
pub mod web;

pub use approvals::{
    APPROVALS_FILE, ApprovalRequest, Approvals, Approver, Decision, DecisionFuture, NoHuman,
};
pub use compaction::{MERGE_SUMMARIES_INSTRUCTIONS, SUMMARIZER_SYSTEM, context_tokens};
pub use error::AgentError;
pub use local_runtime::{EventSink, LocalRuntime};
pub use policy::Policy;
pub use policy_config::policy_for;
pub use prompt::{
    BOOTSTRAP_FILES, PromptInput, SkillEntry, TOTAL_MAX_CHARS, bootstrap,
    build as build_system_prompt,
};
pub use runner::prompt_cost::PROMPT_BUDGET_TOKENS;
pub use runner::resume::INTERRUPTED_BY_RESTART;
pub use runner::{Agent, AgentEvent, MAX_STEPS, THINKING_LEVELS, TurnOutcome};
pub use runtime::{
    BoxFuture, CHANNELS, GatewayControl, Outbound, Runtime, TurnHandle, TurnRequest, finish_within,
};
pub use session_kind::SessionKind;
pub use session_notes::{append_to_main, append_user, record_cancelled};
pub use subagent::{
    Accepted, Cleanup, SpawnArgs, SpawnSource, announcement, report_request,
    spawn as spawn_subagent,
};
pub use subagents::Subagents;
pub use tool_hook::ToolHook;
pub use tools::ToolBox;
pub use tools::browser::{BROWSER_PROFILE, browser_profile, home_browser, page_rules};
pub use transcript::{Context, Entry, SessionEntry, Sessions};
