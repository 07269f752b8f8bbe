//! The hub events of one run: `chat` and `agent` frames, and how an agent's own event shows.

use lurkbot_agent::AgentEvent;

use crate::protocol::{self, AgentStream, ChatEvent, ChatState, Compaction, Event, ToolPhase};

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
