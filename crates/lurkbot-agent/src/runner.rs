//! The agent loop: one turn = the user's message, then model steps until the model answers
//! without calling tools (at most [`MAX_STEPS`]). Each step streams the reply, appends the
//! assistant message, runs the calls in order (unknown or not-offered tools and malformed
//! arguments become error results the model sees), wraps every result as untrusted data and
//! appends the results: the transcript is flushed at the end of every step.

use std::sync::Arc;

use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_llm::{Failover, Message, ToolCall, ToolSpec};
use lurkbot_term::TerminalExec;
use serde_json::Value;

use crate::approvals::{ApprovalRequest, Approvals, Approver, Decision, NoHuman};
use crate::compaction::{cut_point, estimate_tokens, messages_tokens, summarize};
use crate::error::AgentError;
pub use crate::outcome::TurnOutcome;
use crate::policy::Policy;
use crate::policy_config::policy_for;
use crate::runtime::Runtime;
use crate::tools::{ToolBox, ToolCtx, ToolOutput};
use crate::transcript::{Entry, Tracked};

mod offered;
pub(crate) mod prompt_cost;
pub(crate) mod resume;
mod turn;

/// Thinking levels `/think` accepts.
pub const THINKING_LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high"];
/// Most model steps in one turn.
pub const MAX_STEPS: usize = 24;
/// Most tokens one step may generate.
const MAX_TOKENS: u32 = 4096;

/// What the caller sees while a turn runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEvent {
    /// Reply text as it streams.
    Text(String),
    /// A tool call starts.
    ToolStart {
        /// Call id.
        id: String,
        /// Tool.
        name: String,
        /// Arguments JSON.
        arguments: String,
    },
    /// A call waits for a human decision (the run is `approval_pending`).
    ApprovalPending(ApprovalRequest),
    /// The decision on a pending call.
    ApprovalResolved {
        /// Call id.
        id: String,
        /// What was decided.
        decision: Decision,
    },
    /// Older messages were replaced by a summary.
    Compacted {
        /// Messages summarised.
        summarized: usize,
        /// Messages kept verbatim.
        kept: usize,
    },
    /// A tool call ended.
    ToolEnd {
        /// Call id.
        id: String,
        /// Tool.
        name: String,
        /// Whether it failed.
        is_error: bool,
        /// The first line of its result.
        preview: String,
    },
}

/// An agent bound to a home.
pub struct Agent {
    home: Home,
    exec: Arc<TerminalExec>,
    tools: ToolBox,
    failover: Failover,
    config: Config,
    /// The zone of the settings (`agent.timezone` or the system's), read once: the caps' days.
    zone: lurkbot_core::Zone,
    approvals: Arc<Approvals>,
    approver: Arc<dyn Approver>,
    /// Who runs other sessions' turns and delivers messages (sub-agents, `sessions_send`,
    /// `message`, `cron`); without one those tools say what they need.
    runtime: Option<Arc<dyn Runtime>>,
    /// MCP servers whose tools join the built-in ones.
    mcp: Option<Arc<crate::mcp::McpHub>>,
    /// Asked before every tool call (plugins' `before_tool` hooks).
    tool_hook: Option<Arc<dyn crate::ToolHook>>,
    /// A cap on the next turns' tokens (a cron job's, a sub-agent's, the heartbeat's day).
    run_budget: Option<crate::usage::RunBudget>,
    /// The next turns' messages are someone else's text (an auto-forwarded IRC line): they
    /// run with the group tool policy, whatever the session.
    untrusted_input: bool,
    /// Images shown with the next turn's message (a photo sent on a channel); that turn takes them.
    images: Vec<lurkbot_llm::ImagePart>,
    thinking: String,
    /// The last session's context, reused while its transcript is unchanged.
    cache: Option<Tracked>,
    /// The model's real context window, learned from an overflow error that named it.
    learned_window: Option<u64>,
    /// Where the next turn records its steps (the gateway's turn journal), taken by it.
    journal: Option<crate::journal::Journal>,
}

impl Agent {
    /// An agent using `failover` for its models.
    pub fn new(home: Home, config: Config, failover: Failover) -> Self {
        let exec = Arc::new(TerminalExec::new(
            home.clone(),
            lurkbot_term::default_registry(),
        ));
        let approvals = Arc::new(Approvals::new(&home, config.approvals.clone()));
        Self {
            home,
            exec,
            tools: ToolBox::builtin(),
            failover,
            zone: crate::usage::zone(&config),
            config,
            approvals,
            approver: Arc::new(NoHuman),
            runtime: None,
            mcp: None,
            tool_hook: None,
            run_budget: None,
            untrusted_input: false,
            images: Vec::new(),
            thinking: "off".into(),
            cache: None,
            learned_window: None,
            journal: None,
        }
    }

    /// The thinking level (`off`, `minimal`, `low`, `medium`, `high`) sent with model requests.
    ///
    /// # Errors
    /// `Config` for an unknown level.
    pub fn set_thinking(&mut self, level: &str) -> Result<(), AgentError> {
        let level = level.trim().to_ascii_lowercase();
        if !THINKING_LEVELS.contains(&level.as_str()) {
            return Err(AgentError::Config(format!(
                "unknown thinking level '{level}' ({})",
                THINKING_LEVELS.join(", ")
            )));
        }
        self.thinking = level;
        Ok(())
    }

    /// The thinking level.
    pub fn thinking(&self) -> &str {
        &self.thinking
    }

    /// Who answers approval requests (by default nobody: such calls are denied).
    #[must_use]
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Runs other sessions' turns and delivers messages through `runtime`.
    #[must_use]
    pub fn with_runtime(mut self, runtime: Arc<dyn Runtime>) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Marks the turns that follow as carrying someone else's text (an auto-forwarded IRC
    /// line): the group tool policy applies and the owner's private memory stays out.
    pub fn set_untrusted_input(&mut self, untrusted: bool) {
        self.untrusted_input = untrusted;
    }

    /// Shows `images` with the next turn's message (made by [`crate::images::keep`]).
    pub fn attach_images(&mut self, images: Vec<lurkbot_llm::ImagePart>) {
        self.images = images;
    }

    /// Caps the tokens of the turns that follow (`None`: only `[budgets]` apply).
    pub fn set_run_budget(&mut self, budget: Option<crate::usage::RunBudget>) {
        self.run_budget = budget;
    }

    /// Asks `hook` before every tool call (plugins' `before_tool` hooks).
    #[must_use]
    pub fn with_tool_hook(mut self, hook: Arc<dyn crate::ToolHook>) -> Self {
        self.tool_hook = Some(hook);
        self
    }

    /// Offers the tools of the MCP servers in `hub` (as `<server>__<tool>`, `group:plugins`).
    #[must_use]
    pub fn with_mcp(mut self, hub: Arc<crate::mcp::McpHub>) -> Self {
        self.mcp = Some(hub);
        self
    }

    /// Uses `exec` and `approvals` owned by the caller (the gateway's session host lends one
    /// of each to every session's agent, so an allow-always decision holds in all of them).
    #[must_use]
    pub fn with_shared(mut self, exec: Arc<TerminalExec>, approvals: Arc<Approvals>) -> Self {
        self.exec = exec;
        self.approvals = approvals;
        self
    }

    /// The tool policy for a session, given the model that will answer.
    pub fn policy(&self, session: &SessionKey) -> Policy {
        let mut policy = policy_for(
            &self.home,
            &self.config,
            session,
            &self.failover.primary().to_string(),
        );
        policy.group |= self.untrusted_input;
        policy
    }

    /// The specs of the tools the session is offered.
    ///
    /// # Errors
    /// `Config` for an unknown tool profile.
    pub fn offered(&self, session: &SessionKey) -> Result<Vec<Arc<ToolSpec>>, AgentError> {
        self.offered_by(&self.policy(session))
    }

    /// Runs one turn.
    ///
    /// # Errors
    /// Model failures (after failover) and store failures; what was done before stays in the
    /// transcript.
    pub async fn turn(
        &mut self,
        session: &SessionKey,
        message: &str,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<TurnOutcome, AgentError> {
        let started = std::time::Instant::now();
        tracing::debug!(session = session.as_str(), message, "turn message");
        let outcome = self.turn_steps(session, message, on_event).await;
        let ms = started.elapsed().as_millis() as u64;
        match &outcome {
            Ok(done) => tracing::info!(
                session = session.as_str(),
                model = done.model.as_str(),
                steps = done.steps,
                input_tokens = done.usage.input_tokens,
                output_tokens = done.usage.output_tokens,
                ms,
                trace_id = turn::trace_id().as_deref(),
                "turn"
            ),
            Err(e) => tracing::warn!(
                session = session.as_str(),
                ms,
                trace_id = turn::trace_id().as_deref(),
                error = %e,
                "turn failed"
            ),
        }
        count_turn(session, started, &outcome);
        outcome
    }

    async fn turn_steps(
        &mut self,
        session: &SessionKey,
        message: &str,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<TurnOutcome, AgentError> {
        let turn = self.prepare(session, Some(message))?;
        self.steps_from(turn, 1, on_event).await
    }

    /// The model steps of a turn from step `first` on (1 for a new turn; later for a resumed one).
    async fn steps_from(
        &mut self,
        mut turn: turn::Turn<'_>,
        first: usize,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<TurnOutcome, AgentError> {
        for step in first..=MAX_STEPS {
            let response = self.call_model(&mut turn, on_event).await?;
            let calls = response.tool_calls.clone();
            // Synced now only when it ends the turn; with calls, the results' append syncs it.
            turn.sessions.append_tracked(
                &mut turn.tracked,
                &[Entry::message(Message::assistant(
                    response.text.clone(),
                    calls.clone(),
                ))],
                calls.is_empty(),
            )?;
            self.journal_step(step, None);
            if calls.is_empty() {
                return self.finish(turn, response.text, step);
            }
            self.run_tools(&mut turn, step, &calls, on_event).await?;
        }
        let note = format!("[stopped after {MAX_STEPS} model steps without a final answer]");
        turn.sessions.append_tracked(
            &mut turn.tracked,
            &[Entry::message(Message::assistant(note.clone(), Vec::new()))],
            true,
        )?;
        on_event(AgentEvent::Text(note.clone()));
        self.finish(turn, note, MAX_STEPS)
    }

    /// Records that the running turn of `session` was cancelled (Ctrl-C): a marker message
    /// follows what was already written (unanswered tool calls are then read as "interrupted"),
    /// so the next turn starts clean.
    ///
    /// # Errors
    /// Store failures.
    pub fn cancelled(&self, session: &SessionKey) -> Result<(), AgentError> {
        crate::session_notes::record_cancelled(&self.home, session)
    }

    /// The context window in force: the configured one, or the smaller one a server named.
    pub fn context_window(&self) -> u64 {
        let configured = self.config.agent.context_window;
        self.learned_window
            .map_or(configured, |w| w.min(configured))
    }

    /// Tokens kept free for the reply: `reserve_tokens`, at most a quarter of the window.
    fn reserve_tokens(&self) -> u64 {
        self.config
            .agent
            .reserve_tokens
            .min(self.context_window() / 4)
    }

    /// `max_tokens` of a request: `agent.max_output_tokens`, else the reserve (at most 4,096).
    fn max_output_tokens(&self) -> u32 {
        let tokens = match self.config.agent.max_output_tokens {
            Some(n) => n.min(self.context_window() / 2),
            None => self.reserve_tokens().min(u64::from(MAX_TOKENS)),
        };
        u32::try_from(tokens.max(1)).unwrap_or(MAX_TOKENS)
    }

    /// Whether a request of `estimate` tokens is over `context_window - reserve_tokens`.
    fn over_budget(&self, estimate: u64) -> bool {
        let limit = self.context_window().saturating_sub(self.reserve_tokens());
        estimate > limit
    }

    /// Summarises the older part of the session; `false` when there is nothing to summarise.
    /// The summary calls are checked against the caps and recorded like the turn's own, and
    /// count towards the turn's usage.
    async fn compact(
        &mut self,
        turn: &mut turn::Turn<'_>,
        overflowed: bool,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<bool, AgentError> {
        let window = self.context_window();
        let raw = &turn.tracked.raw;
        let Some(cut) = cut_point(&raw.messages, window, overflowed) else {
            return Ok(false);
        };
        let meter = crate::usage::Meter {
            config: &self.config,
            zone: &self.zone,
            home: &self.home,
            agent: turn.session.agent_id(),
            session: turn.session.as_str(),
            run_budget: self.run_budget.as_ref(),
        };
        let summary = summarize(
            &mut self.failover,
            &meter,
            (&turn.model, &mut turn.usage),
            raw.summary.as_deref(),
            &raw.messages[..cut],
            window,
        )
        .await?;
        let kept = raw.messages.len() - cut;
        turn.sessions.append_tracked(
            &mut turn.tracked,
            &[Entry::Compaction {
                ts: lurkbot_core::now_ms(),
                summary,
                kept,
            }],
            true,
        )?;
        on_event(AgentEvent::Compacted {
            summarized: cut,
            kept,
        });
        Ok(true)
    }

    async fn run_call(
        &self,
        ctx: &ToolCtx<'_>,
        offered: &[Arc<ToolSpec>],
        call: &ToolCall,
        step: usize,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> ToolOutput {
        let (name, arguments) = (call.name.as_str(), call.arguments.as_str());
        if !offered.iter().any(|t| t.name.eq_ignore_ascii_case(name)) {
            return ToolOutput::error(format!("tool '{name}' is not available in this session"));
        }
        let tool = self.tools.get(name);
        if tool.is_none() && self.mcp.is_none() {
            return ToolOutput::error(format!("tool '{name}' does not exist"));
        }
        let args: Value = match serde_json::from_str(arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return ToolOutput::error(format!(
                    "the arguments of '{name}' are not a JSON object: {arguments}"
                ));
            }
        };
        // A plugin's policy first: a refusal spares the human a question (an allow grants
        // nothing; approvals and the gate still decide).
        if let Some(hook) = &self.tool_hook
            && let Err(reason) = hook.before_tool(ctx.session.as_str(), name, &args).await
        {
            return ToolOutput::error(format!(
                "refused by a plugin's policy: {reason}. Do not retry this call; do something else or tell the user why."
            ));
        }
        if let Some(request) = self
            .approvals
            .check(ctx.session.as_str(), &call.id, name, &args)
        {
            self.journal_call(step, "approval", call);
            on_event(AgentEvent::ApprovalPending(request.clone()));
            let decision = crate::approvals::ask(self.approver.as_ref(), &request).await;
            self.journal_call(step, "run", call);
            on_event(AgentEvent::ApprovalResolved {
                id: call.id.clone(),
                decision,
            });
            match decision {
                Decision::Deny => {
                    return ToolOutput::error(format!(
                        "denied: the user did not approve this call ({}). Do not retry it; ask the user or do something else.",
                        request.reason
                    ));
                }
                Decision::AllowAlways => {
                    if let Err(e) = self.approvals.remember(&request.key) {
                        on_event(AgentEvent::Text(format!(
                            "\n[the allow-always decision could not be saved: {e}]\n"
                        )));
                    }
                }
                Decision::AllowOnce => {}
            }
        }
        match (tool, &self.mcp) {
            (Some(tool), _) => tool.run(ctx, &args).await,
            (None, Some(hub)) => hub
                .call(name, &args)
                .await
                .unwrap_or_else(|| ToolOutput::error(format!("tool '{name}' does not exist"))),
            (None, None) => ToolOutput::error(format!("tool '{name}' does not exist")),
        }
    }
}

/// Characters a message's JSON envelope adds around its text on the wire
/// (`{"role":"assistant","content":…}`, a comma).
const MESSAGE_ENVELOPE_CHARS: u64 = 32;

/// The estimated input tokens of a request as the provider receives it (its messages and tools
/// as compact JSON, characters / 4, ARCHITECTURE.md §9): the system prompt is measured as the
/// JSON string it travels as (line breaks and quotes escaped), each message with its envelope.
pub(crate) fn request_tokens(system: &str, messages: &[Message], tool_tokens: u64) -> u64 {
    let system_chars = json_string_chars(system);
    (system_chars + MESSAGE_ENVELOPE_CHARS * (messages.len() as u64 + 1)) / 4
        + tool_tokens
        + messages_tokens(messages)
}

/// The characters of `text` written as a JSON string (quotes and escapes included), counted
/// without writing it: this runs on every step of a turn.
fn json_string_chars(text: &str) -> u64 {
    2 + text
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if c.is_control() && (c as u32) < 0x20 => 6,
            _ => 1,
        })
        .sum::<u64>()
}

/// About how many tokens the tools' descriptions and schemas take in a request (the same for
/// every step of a turn, so worked out once).
pub(crate) fn tools_tokens(tools: &[Arc<ToolSpec>]) -> u64 {
    // Each spec's figure is kept with the spec it was measured on: a turn re-serialized every
    // schema. The built-in specs are the same `Arc` every turn (found by pointer); a spec made
    // anew (an MCP server's, the browser's with `evaluate`) is compared whole, and measured
    // again when it changed.
    type Known = std::collections::HashMap<String, (Arc<ToolSpec>, u64)>;
    static KNOWN: std::sync::Mutex<Option<Known>> = std::sync::Mutex::new(None);
    let mut known = KNOWN.lock().ok();
    tools
        .iter()
        .map(|t| {
            let cached = known.as_mut().and_then(|k| {
                k.get_or_insert_with(Default::default)
                    .get(&t.name)
                    .filter(|(spec, _)| Arc::ptr_eq(spec, t) || **spec == **t)
                    .map(|(_, n)| *n)
            });
            if let Some(n) = cached {
                return n;
            }
            let wire = serde_json::json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}});
            let n = estimate_tokens(&wire.to_string());
            if let Some(k) = known.as_mut() {
                k.get_or_insert_with(Default::default)
                    .insert(t.name.clone(), (Arc::clone(t), n));
            }
            n
        })
        .sum()
}

/// The host name and `os (arch)` for the runtime line, read once per process (a turn read
/// `/proc/sys/kernel/hostname` each time; a renamed host shows after a restart).
fn host_and_os() -> (String, String) {
    static HOST_AND_OS: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    HOST_AND_OS
        .get_or_init(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .or_else(|_| std::fs::read_to_string("/etc/hostname"))
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "unknown".into());
            let os = format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH);
            (host, os)
        })
        .clone()
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// Counts a turn's end in the metrics (ARCHITECTURE.md §6.4): by its source and outcome, and
/// its duration.
pub(crate) fn count_turn(
    session: &SessionKey,
    started: std::time::Instant,
    outcome: &Result<TurnOutcome, AgentError>,
) {
    use lurkbot_core::metrics::{TURN_SECONDS, TURNS};
    let source = session.source();
    let result = match outcome {
        Ok(_) => "ok",
        Err(AgentError::BudgetExceeded(_)) => "budget",
        Err(_) => "error",
    };
    TURNS.inc(&[source, result]);
    TURN_SECONDS.observe(&[source], started.elapsed().as_secs_f64());
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_string_length_is_counted_as_serde_json_writes_it() {
        for text in [
            "plain",
            "a \"quoted\" line\nand a tab\t\\ \u{1} end",
            "",
            "ünïcödé ☃",
        ] {
            let written = serde_json::to_string(text).unwrap_or_default();
            assert_eq!(
                super::json_string_chars(text),
                written.chars().count() as u64,
                "{text:?}"
            );
        }
    }
}
