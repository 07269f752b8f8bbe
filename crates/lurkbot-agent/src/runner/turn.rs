//! The steps of one turn, as OpenClaw's run loop names them: **prepare** (read the session
//! index once, record the user's message, gather what the prompt needs), **call the model**
//! (compacting first when the context would not fit, or after the server says it did not),
//! **run the tools** the model asked for, and **record** the turn in the index.

use lurkbot_core::{PromptMode, Secrets, SessionKey};
use lurkbot_llm::{
    ChatRequest, ChatResponse, ErrorKind, Message, StreamEvent, ToolCall, ToolSpec, Usage,
};

use super::{Agent, AgentEvent, TurnOutcome, host_and_os, today};
use crate::compaction::estimate_tokens;
use crate::error::AgentError;
use crate::policy::Policy;
use crate::prompt::{PromptInput, SkillEntry, bootstrap, build};
use crate::session_kind::SessionKind;

use crate::tools::ToolCtx;
use crate::transcript::{Entry, SessionEntry, Sessions, Tracked};
use crate::untrusted::wrap;

/// One turn in progress: what [`Agent::prepare`] read once, shared by the later steps.
pub(super) struct Turn<'a> {
    pub(super) session: &'a SessionKey,
    pub(super) sessions: Sessions,
    /// The session's index entry, read once per turn.
    entry: SessionEntry,
    policy: Policy,
    offered: Vec<std::sync::Arc<ToolSpec>>,
    /// About how many tokens `offered` takes in a request.
    offered_tokens: u64,
    pub(super) tracked: Tracked,
    kind: SessionKind,
    mode: PromptMode,
    files: Vec<(String, String)>,
    skills: Vec<SkillEntry>,
    host: String,
    os: String,
    pub(super) usage: Usage,
    /// The model that answered last (the primary until one answers).
    pub(super) model: String,
    /// Secret values (home and skill `.env` files), read once: no tool can write a `.env`
    /// file, so they cannot change within the turn.
    redactor: lurkbot_term::Redactor,
    /// Voice notes made so far.
    pub(super) voice_notes: Vec<String>,
}

impl Agent {
    /// Reads the session index once, records the user's message (none for a resumed turn,
    /// whose message is already in the transcript) and gathers what every step needs. A
    /// configuration error stops the turn before anything is recorded.
    pub(super) fn prepare<'a>(
        &mut self,
        session: &'a SessionKey,
        message: Option<&str>,
    ) -> Result<Turn<'a>, AgentError> {
        let sessions = Sessions::open(&self.home, session.agent_id());
        let (entry, first_run) = sessions.open_turn(session)?;
        let policy = self.policy(session);
        let offered = self.offered_by(&policy)?;
        let mut tracked = sessions.tracked(&entry.session_id, self.cache.take())?;
        let model = self.failover.primary().to_string();
        let (images, note) =
            crate::images::for_model(&self.config, &model, std::mem::take(&mut self.images));
        if let Some(message) = message {
            let text = match note {
                Some(note) => format!("{message}{note}"),
                None => message.to_string(),
            };
            if let Some(journal) = &self.journal {
                journal.base(tracked.transcript_bytes());
            }
            sessions.append_tracked(
                &mut tracked,
                &[Entry::message(Message::user(text).with_images(images))],
                false,
            )?;
        }
        let kind = policy.session_kind();
        let mode = match (self.config.agent.prompt_mode, kind) {
            (PromptMode::Full, SessionKind::Subagent) => PromptMode::Minimal,
            (mode, _) => mode,
        };
        let (host, os) = host_and_os();
        // Read once for both: the skills' variables and the values to redact.
        let secrets = Secrets::load(&self.home);
        Ok(Turn {
            session,
            entry,
            files: bootstrap(&self.home, kind, first_run),
            skills: crate::skills::offered(&self.home, &self.config, &secrets),
            redactor: lurkbot_term::Redactor::new(secrets.redaction_values()),
            model: self.failover.primary().to_string(),
            sessions,
            policy,
            offered_tokens: super::tools_tokens(&offered),
            offered,
            tracked,
            kind,
            mode,
            host,
            os,
            usage: Usage::default(),
            voice_notes: Vec::new(),
        })
    }

    /// One model step: the reply (text streamed to `on_event`), its usage added to the turn's.
    /// Compacts first when the context would not fit, and once more when the server says it
    /// did not (learning the window it names).
    pub(super) async fn call_model(
        &mut self,
        turn: &mut Turn<'_>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<ChatResponse, AgentError> {
        let mut compacted = false;
        let answered = loop {
            let mut context = turn.tracked.context();
            crate::images::load(&self.home, &mut context.messages);
            let system = build(
                &PromptInput {
                    mode: turn.mode,
                    tools: &turn.offered,
                    skills: &turn.skills,
                    agent_id: turn.session.agent_id(),
                    session: turn.session.as_str(),
                    kind: turn.kind,
                    model: &turn.model,
                    date: &today(),
                    host: &turn.host,
                    os: &turn.os,
                    thinking: &self.thinking,
                    sandbox: turn.policy.sandbox,
                    summary: context.summary.as_deref(),
                },
                &turn.files,
            );
            let estimate = super::request_tokens(&system, &context.messages, turn.offered_tokens);
            if !compacted && self.over_budget(estimate) {
                compacted = self.compact(turn, false, on_event).await?;
                if compacted {
                    continue;
                }
            }
            // The caps first: a call that would pass one is never sent.
            let meter = crate::usage::Meter {
                config: &self.config,
                zone: &self.zone,
                home: &self.home,
                agent: turn.session.agent_id(),
                session: turn.session.as_str(),
                run_budget: self.run_budget.as_ref(),
            };
            let run_used = turn.usage.input_tokens + turn.usage.output_tokens;
            let _held = meter.reserve(&turn.model, estimate, run_used)?;
            let request = ChatRequest {
                model: String::new(),
                system,
                messages: context.messages,
                tools: turn.offered.clone(),
                max_tokens: self.max_output_tokens(),
                reasoning: Some(self.thinking.clone()),
            };
            let result = self
                .failover
                .chat(&request, &mut |event| {
                    if let StreamEvent::Text(text) = event {
                        on_event(AgentEvent::Text(text));
                    }
                })
                .await;
            match result {
                Ok(answered) => {
                    let response = &answered.response;
                    meter.record(&answered.model.to_string(), response.usage, || {
                        let calls: String = response
                            .tool_calls
                            .iter()
                            .map(|c| c.arguments.as_str())
                            .collect();
                        (
                            estimate,
                            estimate_tokens(&response.text) + estimate_tokens(&calls),
                        )
                    });
                    break answered;
                }
                Err(e) if e.kind == ErrorKind::ContextOverflow && !compacted => {
                    // A server that names its real window (llama-server's `-c 4096`) is
                    // believed from now on, instead of the configured 128,000.
                    if let Some(window) = e.context_window {
                        self.learned_window =
                            Some(self.learned_window.map_or(window, |w| w.min(window)));
                    }
                    compacted = self.compact(turn, true, on_event).await?;
                    if !compacted {
                        return Err(e.into());
                    }
                }
                Err(e) => {
                    tracing::warn!(session = turn.session.as_str(), error = %e, "model call failed");
                    return Err(e.into());
                }
            }
        };
        turn.model = answered.model.to_string();
        turn.usage.input_tokens += answered.response.usage.input_tokens;
        turn.usage.output_tokens += answered.response.usage.output_tokens;
        Ok(answered.response)
    }

    /// Runs the calls of one reply in order, appending each result (redacted and labelled
    /// untrusted) as it comes, so a crash loses at most the call in flight.
    pub(super) async fn run_tools(
        &self,
        turn: &mut Turn<'_>,
        step: usize,
        calls: &[ToolCall],
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), AgentError> {
        let ctx = ToolCtx {
            home: &self.home,
            session: turn.session,
            entry: &turn.entry,
            sessions: &turn.sessions,
            exec: &self.exec,
            config: &self.config,
            model: &turn.model,
            runtime: self.runtime.as_ref(),
            others: turn.policy.group,
        };
        for (i, call) in calls.iter().enumerate() {
            on_event(AgentEvent::ToolStart {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            self.journal_call(step, "run", call);
            let started = std::time::Instant::now();
            let mut span = tool_span(&turn.offered, call);
            let mut output = lurkbot_core::trace::scope(
                span.context(),
                self.run_call(&ctx, &turn.offered, call, step, &mut *on_event),
            )
            .await;
            if output.is_error {
                span.fail("the tool answered with an error");
            }
            drop(span);
            tracing::info!(
                session = turn.session.as_str(),
                tool = call.name.as_str(),
                ok = !output.is_error,
                ms = started.elapsed().as_millis() as u64,
                trace_id = trace_id().as_deref(),
                "tool call"
            );
            count_tool(&turn.offered, call, started, output.is_error);
            turn.voice_notes.extend(output.voice.take());
            // Secret values (home and skill .env files) never reach the model.
            output.text = turn.redactor.text(&output.text);
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
            let result = Entry::message(
                Message::tool(
                    call.id.clone(),
                    wrap(&call.name, &output.text),
                    output.is_error,
                )
                .with_images(output.images),
            );
            // The step's last result makes it durable (one sync per step).
            let last = i + 1 == calls.len();
            ctx.sessions
                .append_tracked(&mut turn.tracked, &[result], last)?;
            self.journal_step(step, None);
        }
        Ok(())
    }

    /// Records the turn in the index and keeps its context for the next turn.
    pub(super) fn finish(
        &mut self,
        turn: Turn<'_>,
        text: String,
        steps: usize,
    ) -> Result<TurnOutcome, AgentError> {
        turn.sessions
            .record_turn(turn.session, &turn.model, turn.usage)?;
        self.cache = Some(turn.tracked);
        Ok(TurnOutcome {
            text,
            model: turn.model,
            usage: turn.usage,
            steps,
            session_id: turn.entry.session_id,
            voice_notes: turn.voice_notes,
        })
    }
}

/// The tool's name when it is one of the tools offered; `unknown` for a name the model made
/// up (so a metric's labels stay bounded).
fn offered_name<'a>(offered: &'a [std::sync::Arc<ToolSpec>], call: &ToolCall) -> &'a str {
    offered
        .iter()
        .find(|spec| spec.name == call.name)
        .map_or("unknown", |spec| spec.name.as_str())
}

/// A tool call's span (ARCHITECTURE.md §6.4): its arguments only with `capture_content`.
fn tool_span(offered: &[std::sync::Arc<ToolSpec>], call: &ToolCall) -> lurkbot_core::trace::Span {
    use lurkbot_core::trace::{Kind, Span};
    let tool = offered_name(offered, call);
    let mut span = Span::start(format!("execute_tool {tool}"), Kind::Internal);
    if span.recording() {
        span.set("gen_ai.operation.name", "execute_tool");
        span.set("gen_ai.tool.name", tool);
        span.set("gen_ai.tool.call.id", call.id.as_str());
        span.set_content("gen_ai.tool.call.arguments", &call.arguments);
    }
    span
}

/// The trace id the task works under, for log lines.
pub(crate) fn trace_id() -> Option<String> {
    lurkbot_core::trace::current().map(|c| c.trace_hex())
}

/// Counts a tool call in the metrics (ARCHITECTURE.md §6.4): named only when it is one of the
/// tools offered (a name the model made up is `unknown`, so the labels stay bounded).
fn count_tool(
    offered: &[std::sync::Arc<ToolSpec>],
    call: &ToolCall,
    started: std::time::Instant,
    failed: bool,
) {
    use lurkbot_core::metrics::{TOOL_CALL_SECONDS, TOOL_CALLS};
    let tool = offered_name(offered, call);
    TOOL_CALLS.inc(&[tool, if failed { "error" } else { "ok" }]);
    TOOL_CALL_SECONDS.observe(&[tool], started.elapsed().as_secs_f64());
}
