//! Resuming a turn cut by a crash, a kill or a stop longer than the grace (ARCHITECTURE.md
//! §6.3): the transcript after the length the journal recorded is the turn's own, and says
//! where it stopped.
//!
//! - Nothing written (the message never reached the transcript): the turn runs from the start.
//! - The message, or a step whose tool results are all there: the model is asked again.
//! - An assistant message with calls left without results: each call that never started, or
//!   waited for an approval (asked again), or only reads (`side_effect_free`), is run; the one
//!   that was running and may have acted is answered "interrupted by a restart; its effect is
//!   unknown", and the model decides.
//! - A final answer: the turn ended; its answer is returned without a model call.

use std::collections::HashSet;

use lurkbot_core::SessionKey;
use lurkbot_llm::{Message, Role, ToolCall};
use serde_json::Value;

use super::{Agent, AgentEvent, TurnOutcome};
use crate::error::AgentError;
use crate::journal::{InFlight, Journal};
use crate::transcript::{Entry, Sessions};
use crate::untrusted::wrap;

/// The result a call cut by a restart gets when it may have acted.
pub const INTERRUPTED_BY_RESTART: &str = "interrupted by a restart; its effect is unknown. \
     Check whether it happened before doing it again, or tell the user.";

impl Agent {
    /// Records the next turn's steps in `journal` (the gateway's; taken by that turn).
    pub fn set_journal(&mut self, journal: Option<Journal>) {
        self.journal = journal;
    }

    pub(super) fn journal_step(&self, step: usize, tool: Option<(&str, &str, &str)>) {
        if let Some(journal) = &self.journal {
            journal.step(step, tool);
        }
    }

    pub(super) fn journal_call(&self, step: usize, phase: &str, call: &ToolCall) {
        self.journal_step(step, Some((phase, &call.id, &call.name)));
    }

    /// Continues the turn of `session` whose journal recorded the transcript's length `base`
    /// before its `message`, and `in_flight` as the tool call in flight (the journal's `tool`).
    ///
    /// # Errors
    /// As [`Agent::turn`].
    pub async fn resume(
        &mut self,
        session: &SessionKey,
        message: &str,
        base: Option<u64>,
        in_flight: Option<&str>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<TurnOutcome, AgentError> {
        let sessions = Sessions::open(&self.home, session.agent_id());
        let entry = sessions.get_or_create(session)?;
        let written = sessions.transcript_len(&entry.session_id);
        let Some(base) = base.filter(|b| written > *b) else {
            tracing::info!(session = session.as_str(), "turn resumed from its start");
            return self.turn(session, message, on_event).await;
        };
        let started = std::time::Instant::now();
        let outcome = self
            .resume_steps(session, &sessions, &entry, base, in_flight, on_event)
            .await;
        super::count_turn(session, started, &outcome);
        outcome
    }

    /// [`Agent::resume`] of a turn that wrote past `base` in `entry`'s transcript.
    async fn resume_steps(
        &mut self,
        session: &SessionKey,
        sessions: &Sessions,
        entry: &crate::session_index::SessionEntry,
        base: u64,
        in_flight: Option<&str>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<TurnOutcome, AgentError> {
        // The turn's own entries end where the session's next message begins: a turn resumed
        // after later turns ran (its end could not be recorded) is answered with its own
        // answer, never a later one's.
        let mut users = 0;
        let own: Vec<Message> = sessions
            .entries_since(&entry.session_id, base)?
            .into_iter()
            .filter_map(|e| match e {
                Entry::Message { message, .. } => Some(message),
                Entry::Compaction { .. } => None,
            })
            .take_while(|m| {
                users += usize::from(m.role == Role::User);
                users <= 1
            })
            .collect();
        let steps = own.iter().filter(|m| m.role == Role::Assistant).count();
        tracing::info!(
            session = session.as_str(),
            steps,
            "turn resumed after a restart"
        );
        let turn = self.prepare(session, None)?;
        let Some(last) = own.iter().rposition(|m| m.role == Role::Assistant) else {
            return self.steps_from(turn, 1, on_event).await;
        };
        if own[last].tool_calls.is_empty() {
            let text = own[last].content.clone();
            return self.finish(turn, text, steps);
        }
        let answered: HashSet<&str> = own[last + 1..]
            .iter()
            .filter(|m| m.role == Role::Tool)
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        let left: Vec<ToolCall> = own[last]
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(c.id.as_str()))
            .cloned()
            .collect();
        let running = in_flight.and_then(InFlight::parse).and_then(|f| match f {
            InFlight::Running(id) => Some(id.to_string()),
            InFlight::Approval(_) => None,
        });
        let mut turn = turn;
        for call in &left {
            if running.as_deref() == Some(call.id.as_str()) && !self.rerun_is_safe(call) {
                tracing::info!(
                    session = session.as_str(),
                    tool = call.name.as_str(),
                    "tool call cut by a restart answered as interrupted"
                );
                let result = Entry::message(Message::tool(
                    call.id.clone(),
                    wrap(&call.name, INTERRUPTED_BY_RESTART),
                    true,
                ));
                turn.sessions
                    .append_tracked(&mut turn.tracked, &[result], false)?;
                continue;
            }
            self.run_tools(&mut turn, steps, std::slice::from_ref(call), on_event)
                .await?;
        }
        self.steps_from(turn, steps + 1, on_event).await
    }

    /// Whether running `call` again changes nothing a user would see.
    fn rerun_is_safe(&self, call: &ToolCall) -> bool {
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        self.tools
            .get(&call.name)
            .is_some_and(|tool| tool.side_effect_free(&args))
    }
}
