//! How a run shows on the hub: its events as they come ([`hub_event`]) and its end
//! ([`SessionHost::report_end`]).

use lurkbot_agent::{AgentEvent, TurnOutcome};

use crate::host::SessionHost;
use crate::protocol::{
    self, AgentStream, ChatEvent, ChatState, Compaction, Event, Lifecycle, LifecyclePhase,
    MethodError, ToolPhase,
};

impl SessionHost {
    /// The end of a run on the hub: lifecycle `end` and `chat` `final`, or lifecycle `error`
    /// (when it had started) and `chat` `error`.
    pub(crate) fn report_end(
        &self,
        run_id: &str,
        session: &str,
        started: bool,
        result: &Result<TurnOutcome, MethodError>,
    ) {
        let lifecycle =
            |phase| agent_event(run_id, session, AgentStream::Lifecycle(Lifecycle { phase }));
        match result {
            Ok(done) => {
                self.hub.emit(lifecycle(LifecyclePhase::End));
                self.hub.emit(chat(
                    run_id,
                    session,
                    ChatState::Final {
                        text: done.text.clone(),
                        model: done.model.clone(),
                        usage: done.usage,
                    },
                ));
            }
            Err(e) => {
                if started {
                    self.hub.emit(lifecycle(LifecyclePhase::Error));
                }
                self.hub.emit(chat(
                    run_id,
                    session,
                    ChatState::Error {
                        message: e.message.clone(),
                    },
                ));
                if e.message.starts_with(lurkbot_agent::usage::BUDGET_EXCEEDED) {
                    self.hub
                        .emit(Event::BudgetExceeded(protocol::BudgetExceeded {
                            run_id: run_id.to_string(),
                            session_key: session.to_string(),
                            message: e.message.clone(),
                        }));
                }
            }
        }
    }
}

/// A `chat` event of one run.
pub(crate) fn chat(run_id: &str, session: &str, state: ChatState) -> Event {
    Event::Chat(ChatEvent {
        run_id: run_id.to_string(),
        session_key: session.to_string(),
        state,
    })
}

/// An `agent` event of one run.
pub(crate) fn agent_event(run_id: &str, session: &str, stream: AgentStream) -> Event {
    Event::Agent(protocol::AgentEvent {
        run_id: run_id.to_string(),
        session_key: session.to_string(),
        stream,
    })
}

/// The hub event for an agent event (text deltas, tools, approvals' outcome, compaction).
pub(crate) fn hub_event(event: &AgentEvent, run_id: &str, session: &str) -> Option<Event> {
    let tool = |phase| agent_event(run_id, session, AgentStream::Tool(phase));
    Some(match event {
        AgentEvent::Text(text) => chat(run_id, session, ChatState::Delta { text: text.clone() }),
        AgentEvent::ToolStart {
            id,
            name,
            arguments,
        } => tool(ToolPhase::Start {
            id: id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
        }),
        AgentEvent::ToolEnd {
            id,
            name,
            is_error,
            preview,
        } => tool(ToolPhase::End {
            id: id.clone(),
            name: name.clone(),
            is_error: *is_error,
            preview: preview.clone(),
        }),
        AgentEvent::ApprovalResolved { id, decision } => tool(ToolPhase::Approval {
            id: id.clone(),
            decision: *decision,
        }),
        AgentEvent::Compacted { summarized, kept } => agent_event(
            run_id,
            session,
            AgentStream::Compaction(Compaction {
                summarized: *summarized,
                kept: *kept,
            }),
        ),
        // The approver emits exec.approval.requested itself.
        AgentEvent::ApprovalPending(_) => return None,
    })
}
