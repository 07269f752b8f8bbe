//! LurkBot's events in OpenClaw's shapes, per connection. OpenClaw's `chat` deltas carry the
//! new text and the whole reply so far, and its `agent` and `chat` payloads number their
//! events per run, so the [`Shaper`] keeps a little state per running turn (dropped when the
//! turn ends; bounded). Events OpenClaw's clients have no use for (`lagged`, `irc.status`,
//! `memory.indexed`, `budget.exceeded` — its text also ends the run's `chat` as an error) are
//! not sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::agent_of;
use crate::protocol::{
    AgentStream, ChatEvent, ChatState, Event, Lifecycle, LifecyclePhase, ToolPhase,
};

/// Most turns tracked at once on one connection (a turn whose end was missed is dropped
/// with the oldest).
const MAX_RUNS: usize = 256;

/// One turn's state on one connection.
#[derive(Default)]
struct Run {
    /// The reply so far.
    text: String,
    /// The run's own event counter.
    seq: u64,
    /// When it started.
    started_at: u64,
}

/// Reshapes one connection's events.
pub(crate) struct Shaper {
    runs: HashMap<String, Run>,
    subscribed: Arc<AtomicBool>,
}

impl Shaper {
    /// A shaper that adds `sessions.changed`/`session.message` once `subscribed` is set.
    pub(crate) fn new(subscribed: Arc<AtomicBool>) -> Self {
        Self {
            runs: HashMap::new(),
            subscribed,
        }
    }

    fn run(&mut self, run_id: &str) -> &mut Run {
        if !self.runs.contains_key(run_id) && self.runs.len() >= MAX_RUNS {
            self.runs.clear();
        }
        let run = self.runs.entry(run_id.to_string()).or_default();
        run.seq += 1;
        run
    }

    /// The `(event, payload)` frames `event` becomes on this connection (none, one or more).
    pub(crate) fn shape(&mut self, event: Event) -> Vec<(&'static str, Value)> {
        let now = lurkbot_core::now_ms();
        match event {
            Event::ConnectChallenge(c) => vec![("connect.challenge", json!(c))],
            Event::Tick(t) => vec![("tick", json!({"ts": t.ts}))],
            Event::Shutdown(s) => vec![("shutdown", json!({"reason": s.reason}))],
            Event::ApprovalRequested(a) => vec![("exec.approval.requested", approval(&a, now))],
            Event::ApprovalResolved(r) => vec![(
                "exec.approval.resolved",
                json!({"id": r.approval_id, "decision": r.decision, "ts": now}),
            )],
            Event::Cron(c) => vec![("cron", json!(c))],
            Event::Heartbeat(h) => vec![("heartbeat", json!(h))],
            Event::Chat(chat) => self.chat(chat, now),
            Event::Agent(agent) => self.agent(agent.run_id, agent.session_key, agent.stream, now),
            Event::Lagged(_)
            | Event::IrcStatus(_)
            | Event::MemoryIndexed(_)
            | Event::BudgetExceeded(_)
            | Event::Canvas(_) => Vec::new(),
        }
    }

    fn subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Relaxed)
    }

    fn chat(&mut self, chat: ChatEvent, now: u64) -> Vec<(&'static str, Value)> {
        let ChatEvent {
            run_id,
            session_key,
            state,
        } = chat;
        let agent_id = agent_of(&session_key);
        let message = |text: &str| {
            json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                "timestamp": now})
        };
        let base = |seq: u64, state: &str| {
            json!({"runId": run_id, "sessionKey": session_key, "agentId": agent_id,
                "seq": seq, "state": state})
        };
        match state {
            ChatState::Delta { text } => {
                let run = self.run(&run_id);
                run.text.push_str(&text);
                let (seq, whole) = (run.seq, run.text.clone());
                let mut chat = base(seq, "delta");
                chat["deltaText"] = json!(text);
                chat["message"] = message(&whole);
                let assistant = json!({"runId": run_id, "seq": seq, "ts": now,
                    "stream": "assistant", "data": {"text": whole, "delta": text}});
                vec![("agent", assistant), ("chat", chat)]
            }
            ChatState::Final { text, .. } => {
                let seq = self.run(&run_id).seq;
                self.runs.remove(&run_id);
                let mut chat = base(seq, "final");
                chat["stopReason"] = json!("stop");
                chat["message"] = message(&text);
                let mut out = vec![("chat", chat)];
                if self.subscribed() {
                    out.push((
                        "session.message",
                        json!({"sessionKey": session_key, "agentId": agent_id,
                            "message": message(&text)}),
                    ));
                    out.push((
                        "sessions.changed",
                        json!({"sessionKey": session_key, "agentId": agent_id,
                            "reason": "message", "runId": run_id, "ts": now}),
                    ));
                }
                out
            }
            ChatState::Error { message: error } => {
                let seq = self.run(&run_id).seq;
                self.runs.remove(&run_id);
                let mut chat = base(seq, "error");
                chat["errorMessage"] = json!(error);
                vec![("chat", chat)]
            }
            ChatState::Aborted => {
                let seq = self.run(&run_id).seq;
                self.runs.remove(&run_id);
                let mut chat = base(seq, "aborted");
                chat["stopReason"] = json!("aborted");
                vec![("chat", chat)]
            }
        }
    }

    fn agent(
        &mut self,
        run_id: String,
        session_key: String,
        stream: AgentStream,
        now: u64,
    ) -> Vec<(&'static str, Value)> {
        let subscribed = self.subscribed();
        let run = self.run(&run_id);
        let seq = run.seq;
        let (stream, data) = match stream {
            AgentStream::Lifecycle(Lifecycle { phase }) => match phase {
                LifecyclePhase::Start => {
                    run.started_at = now;
                    ("lifecycle", json!({"phase": "start", "startedAt": now}))
                }
                LifecyclePhase::End | LifecyclePhase::Error => {
                    let failed = phase == LifecyclePhase::Error;
                    let data = json!({"phase": if failed { "error" } else { "end" },
                        "startedAt": run.started_at, "endedAt": now, "aborted": false,
                        "stopReason": if failed { "error" } else { "stop" }});
                    let mut out = vec![(
                        "agent",
                        json!({"runId": run_id, "seq": seq, "ts": now,
                            "stream": "lifecycle", "data": data}),
                    )];
                    if subscribed {
                        out.push((
                            "sessions.changed",
                            json!({"sessionKey": session_key, "agentId": agent_of(&session_key),
                                "phase": "end", "runId": run_id, "ts": now}),
                        ));
                    }
                    return out;
                }
            },
            AgentStream::Tool(tool) => ("item", tool_item(tool, now)),
            AgentStream::Compaction(c) => (
                "compaction",
                json!({"phase": "end", "summarized": c.summarized, "kept": c.kept}),
            ),
        };
        vec![(
            "agent",
            json!({"runId": run_id, "seq": seq, "ts": now, "stream": stream, "data": data}),
        )]
    }
}

/// An approval as OpenClaw's clients track it: `{id, request, createdAtMs, expiresAtMs}`,
/// answered with `exec.approval.resolve {id, decision}`.
fn approval(a: &crate::protocol::ApprovalRequested, now: u64) -> Value {
    json!({
        "id": a.approval_id,
        "request": {
            "command": a.summary, "toolName": a.tool, "toolCallId": a.call_id,
            "sessionKey": a.session_key, "agentId": agent_of(&a.session_key),
            "warningText": a.reason,
        },
        "createdAtMs": now,
        "expiresAtMs": now + a.timeout_ms,
    })
}

/// A tool call as OpenClaw's `item` stream shows it.
fn tool_item(tool: ToolPhase, now: u64) -> Value {
    match tool {
        ToolPhase::Start { id, name, .. } => json!({
            "itemId": format!("tool:{id}"), "toolCallId": id, "name": name, "kind": "tool",
            "phase": "start", "title": name, "status": "running", "startedAt": now,
        }),
        ToolPhase::End {
            id, name, is_error, ..
        } => json!({
            "itemId": format!("tool:{id}"), "toolCallId": id, "name": name, "kind": "tool",
            "phase": "end", "title": name,
            "status": if is_error { "failed" } else { "completed" }, "endedAt": now,
        }),
        ToolPhase::Approval { id, decision } => json!({
            "itemId": format!("tool:{id}"), "toolCallId": id, "kind": "tool",
            "phase": "update", "status": "running", "approval": decision,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::AgentEvent;

    fn chat(state: ChatState) -> Event {
        Event::Chat(ChatEvent {
            run_id: "r1".into(),
            session_key: "agent:main:main".into(),
            state,
        })
    }

    #[test]
    fn deltas_carry_the_reply_so_far_and_runs_are_forgotten_at_their_end() {
        let subscribed = Arc::new(AtomicBool::new(false));
        let mut shaper = Shaper::new(subscribed.clone());
        let start = Event::Agent(AgentEvent {
            run_id: "r1".into(),
            session_key: "agent:main:main".into(),
            stream: AgentStream::Lifecycle(Lifecycle {
                phase: LifecyclePhase::Start,
            }),
        });
        assert_eq!(shaper.shape(start)[0].1["data"]["phase"], "start");
        shaper.shape(chat(ChatState::Delta { text: "Hel".into() }));
        let second = shaper.shape(chat(ChatState::Delta { text: "lo".into() }));
        assert_eq!(second[0].1["data"]["text"], "Hello");
        assert_eq!(second[1].1["deltaText"], "lo");
        assert_eq!(second[1].1["message"]["content"][0]["text"], "Hello");
        assert_eq!(second[1].1["seq"], 3);
        subscribed.store(true, Ordering::Relaxed);
        let end = shaper.shape(chat(ChatState::Final {
            text: "Hello".into(),
            model: "m".into(),
            usage: lurkbot_llm::Usage::default(),
        }));
        let names: Vec<_> = end.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["chat", "session.message", "sessions.changed"]);
        assert!(shaper.runs.is_empty());
        assert!(
            shaper
                .shape(Event::Lagged(crate::protocol::Lagged { dropped: 1 }))
                .is_empty()
        );
    }
}
