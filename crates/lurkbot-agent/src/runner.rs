//! The agent loop: one turn = the user's message, then model steps until the model answers
//! without calling tools (at most [`MAX_STEPS`]). Each step streams the reply, appends the
//! assistant message, runs the calls in order (unknown or not-offered tools and malformed
//! arguments become error results the model sees), wraps every result as untrusted data and
//! appends the results: the transcript is flushed at the end of every step.

use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_llm::{ChatRequest, Failover, Message, StreamEvent, ToolSpec, Usage};
use lurkbot_term::TerminalExec;
use serde_json::Value;

use crate::error::AgentError;
use crate::policy::{Layer, Policy};
use crate::prompt::{PromptInput, bootstrap, build};
use crate::tools::{ToolBox, ToolCtx, ToolOutput};
use crate::transcript::{Entry, Sessions};
use crate::untrusted::wrap;

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

/// The end of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    /// The final reply text.
    pub text: String,
    /// Model that answered last.
    pub model: String,
    /// Tokens used by the turn.
    pub usage: Usage,
    /// Model steps taken.
    pub steps: usize,
    /// The session id.
    pub session_id: String,
}

/// An agent bound to a home.
pub struct Agent {
    home: Home,
    exec: TerminalExec,
    tools: ToolBox,
    failover: Failover,
    config: Config,
}

impl Agent {
    /// An agent using `failover` for its models.
    pub fn new(home: Home, config: Config, failover: Failover) -> Self {
        let exec = TerminalExec::new(home.clone(), lurkbot_term::default_registry());
        Self {
            home,
            exec,
            tools: ToolBox::builtin(),
            failover,
            config,
        }
    }

    /// The tool policy for a session and provider.
    pub fn policy(&self, session: &SessionKey) -> Policy {
        let tools = &self.config.tools;
        let key = session.as_str();
        Policy {
            profile: tools.profile.clone(),
            provider_profile: None,
            layers: vec![Layer {
                source: "tools".into(),
                allow: tools.allow.clone(),
                deny: tools.deny.clone(),
            }],
            group: key.contains(":group:") || key.contains(":topic:"),
            sandbox: false,
            subagent: key.contains(":subagent:"),
        }
    }

    /// The specs of the tools the session is offered.
    ///
    /// # Errors
    /// `Config` for an unknown tool profile.
    pub fn offered(&self, session: &SessionKey) -> Result<Vec<ToolSpec>, AgentError> {
        let policy = self.policy(session);
        let names = self.tools.names();
        let allowed = policy
            .filter(names.iter().map(String::as_str))
            .map_err(|e| AgentError::Config(format!("[tools] {e}")))?;
        Ok(allowed
            .into_iter()
            .filter_map(|n| self.tools.get(n).map(|t| t.spec()))
            .collect())
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
        let sessions = Sessions::open(&self.home, session.agent_id());
        let entry = sessions.get_or_create(session)?;
        let sid = entry.session_id.clone();
        sessions.append(&sid, &[message_entry(Message::user(message))])?;
        let offered = self.offered(session)?;
        let group = self.policy(session).group;
        let files = bootstrap(&self.home, group);
        let mut usage = Usage::default();
        let mut model = self.failover.primary().to_string();
        for step in 1..=MAX_STEPS {
            let system = build(
                &PromptInput {
                    tools: &offered,
                    session: session.as_str(),
                    model: &model,
                    date: &today(),
                    group,
                },
                &files,
            );
            let request = ChatRequest {
                model: String::new(),
                system,
                messages: sessions.context(&sid)?,
                tools: offered.clone(),
                max_tokens: MAX_TOKENS,
            };
            let answered = self
                .failover
                .chat(&request, &mut |event| {
                    if let StreamEvent::Text(text) = event {
                        on_event(AgentEvent::Text(text));
                    }
                })
                .await?;
            model = answered.model.to_string();
            let response = answered.response;
            usage.input_tokens += response.usage.input_tokens;
            usage.output_tokens += response.usage.output_tokens;
            let calls = response.tool_calls.clone();
            sessions.append(
                &sid,
                &[message_entry(Message::assistant(
                    response.text.clone(),
                    calls.clone(),
                ))],
            )?;
            if calls.is_empty() {
                sessions.record_turn(session, &model, usage)?;
                return Ok(TurnOutcome {
                    text: response.text,
                    model,
                    usage,
                    steps: step,
                    session_id: sid,
                });
            }
            let entry = sessions.get_or_create(session)?;
            let ctx = ToolCtx {
                home: &self.home,
                session,
                entry: &entry,
                sessions: &sessions,
                exec: &self.exec,
            };
            let mut results = Vec::with_capacity(calls.len());
            for call in &calls {
                on_event(AgentEvent::ToolStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                let output = self
                    .run_call(&ctx, &offered, &call.name, &call.arguments)
                    .await;
                on_event(AgentEvent::ToolEnd {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    is_error: output.is_error,
                    preview: output
                        .text
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .chars()
                        .take(200)
                        .collect(),
                });
                results.push(message_entry(Message::tool(
                    call.id.clone(),
                    wrap(&call.name, &output.text),
                    output.is_error,
                )));
            }
            sessions.append(&sid, &results)?;
        }
        sessions.record_turn(session, &model, usage)?;
        let note = format!("[stopped after {MAX_STEPS} model steps without a final answer]");
        sessions.append(
            &sid,
            &[message_entry(Message::assistant(note.clone(), Vec::new()))],
        )?;
        on_event(AgentEvent::Text(note.clone()));
        Ok(TurnOutcome {
            text: note,
            model,
            usage,
            steps: MAX_STEPS,
            session_id: sid,
        })
    }

    async fn run_call(
        &self,
        ctx: &ToolCtx<'_>,
        offered: &[ToolSpec],
        name: &str,
        arguments: &str,
    ) -> ToolOutput {
        if !offered.iter().any(|t| t.name.eq_ignore_ascii_case(name)) {
            return ToolOutput::error(format!("tool '{name}' is not available in this session"));
        }
        let Some(tool) = self.tools.get(name) else {
            return ToolOutput::error(format!("tool '{name}' does not exist"));
        };
        let args: Value = match serde_json::from_str(arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return ToolOutput::error(format!(
                    "the arguments of '{name}' are not a JSON object: {arguments}"
                ));
            }
        };
        tool.run(ctx, &args).await
    }
}

fn message_entry(message: Message) -> Entry {
    Entry::Message {
        ts: lurkbot_core::now_ms(),
        message,
    }
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}
