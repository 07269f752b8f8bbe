//! The server's events as types: one [`Event`] enum serialised as `{"event": name, "payload":
//! …}`, each payload a struct. The server only ever sends an `Event`, and clients (the CLI's
//! remote client, the bench, the tests) read frames back into one with [`EventFrame::parse`], so
//! a name or a field cannot drift between the two sides. The advertised list is
//! [`Event::NAMES`].

use lurkbot_agent::Decision;
use lurkbot_llm::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One server event. Read back by [`EventFrame::parse`], by name (a derived `Deserialize` for
/// an adjacently tagged enum costs the binary 70 KB).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", content = "payload")]
pub enum Event {
    /// The first frame on every connection.
    #[serde(rename = "connect.challenge")]
    ConnectChallenge(Challenge),
    /// A turn's text as it streams, and how it ended.
    #[serde(rename = "chat")]
    Chat(ChatEvent),
    /// A turn's lifecycle, tool calls and compaction.
    #[serde(rename = "agent")]
    Agent(AgentEvent),
    /// A tool call waits for a client's `exec.approval.resolve`.
    #[serde(rename = "exec.approval.requested")]
    ApprovalRequested(ApprovalRequested),
    /// An approval was answered (on this gateway, or on another sharing the state: the one
    /// whose turn waits resolves it then).
    #[serde(rename = "exec.approval.resolved")]
    ApprovalResolved(ApprovalResolved),
    /// Keep-alive.
    #[serde(rename = "tick")]
    Tick(Tick),
    /// This connection fell behind and missed events.
    #[serde(rename = "lagged")]
    Lagged(Lagged),
    /// The gateway is stopping.
    #[serde(rename = "shutdown")]
    Shutdown(Shutdown),
    /// A session's IRC connection changed state.
    #[serde(rename = "irc.status")]
    IrcStatus(IrcStatus),
    /// A heartbeat ran (the payload `lurkbot heartbeat run --json` prints).
    #[serde(rename = "heartbeat")]
    Heartbeat(HeartbeatEvent),
    /// A cron job was added, changed, removed, started or finished.
    #[serde(rename = "cron")]
    Cron(CronEvent),
    /// The memory index was brought up to date after its files changed (the payload
    /// `lurkbot memory index --json` prints).
    #[serde(rename = "memory.indexed")]
    MemoryIndexed(lurkbot_memory::IndexReport),
    /// A model call was not made: it would have passed a budget (the run ended with it).
    #[serde(rename = "budget.exceeded")]
    BudgetExceeded(BudgetExceeded),
    /// A canvas widget was shown, changed or hidden (the `canvas` tool).
    #[serde(rename = "canvas")]
    Canvas(lurkbot_agent::canvas::CanvasChange),
}

/// `budget.exceeded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetExceeded {
    /// The run that stopped.
    pub run_id: String,
    /// Its session.
    pub session_key: String,
    /// `BudgetExceeded: <cap> is …` — the cap, its limit, what was used, when it resets.
    pub message: String,
}

impl Event {
    /// Every event name, as advertised in `hello-ok`.
    pub const NAMES: &[&str] = &[
        "connect.challenge",
        "chat",
        "agent",
        "tick",
        "exec.approval.requested",
        "lagged",
        "shutdown",
        "irc.status",
        "heartbeat",
        "cron",
        "memory.indexed",
        "budget.exceeded",
        "canvas",
    ];

    /// The wire name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ConnectChallenge(_) => "connect.challenge",
            Self::Chat(_) => "chat",
            Self::Agent(_) => "agent",
            Self::ApprovalRequested(_) => "exec.approval.requested",
            Self::ApprovalResolved(_) => "exec.approval.resolved",
            Self::Tick(_) => "tick",
            Self::Lagged(_) => "lagged",
            Self::Shutdown(_) => "shutdown",
            Self::IrcStatus(_) => "irc.status",
            Self::Heartbeat(_) => "heartbeat",
            Self::Cron(_) => "cron",
            Self::MemoryIndexed(_) => "memory.indexed",
            Self::BudgetExceeded(_) => "budget.exceeded",
            Self::Canvas(_) => "canvas",
        }
    }
}

/// `connect.challenge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Challenge {
    /// Random per connection.
    pub nonce: String,
    /// Server time, ms since the epoch.
    pub ts: u64,
}

/// `chat`: one run's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatEvent {
    /// The run.
    pub run_id: String,
    /// Its session.
    pub session_key: String,
    /// What happened.
    #[serde(flatten)]
    pub state: ChatState,
}

/// The `state` of a `chat` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum ChatState {
    /// More reply text.
    Delta {
        /// The new text.
        text: String,
    },
    /// The reply is complete.
    Final {
        /// The whole reply.
        text: String,
        /// The model that answered last.
        model: String,
        /// Tokens the run used.
        usage: Usage,
    },
    /// The run failed; the message says why and what to do.
    Error {
        /// What went wrong.
        message: String,
    },
    /// The run was aborted (`chat.abort` or shutdown).
    Aborted,
}

/// `agent`: one run's progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// The run.
    pub run_id: String,
    /// Its session.
    pub session_key: String,
    /// Which stream, with its data.
    #[serde(flatten)]
    pub stream: AgentStream,
}

/// The `stream` and `data` of an `agent` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stream", content = "data", rename_all = "lowercase")]
pub enum AgentStream {
    /// The run started or ended.
    Lifecycle(Lifecycle),
    /// A tool call.
    Tool(ToolPhase),
    /// Older messages were summarised.
    Compaction(Compaction),
}

/// `agent` lifecycle data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lifecycle {
    /// Where the run is.
    pub phase: LifecyclePhase,
}

/// The phases of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LifecyclePhase {
    /// Started.
    Start,
    /// Ended with a reply.
    End,
    /// Ended with an error.
    Error,
}

/// `agent` tool data, by `phase`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum ToolPhase {
    /// The call starts.
    Start {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as the model sent them.
        arguments: String,
    },
    /// The call ended.
    End {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether it failed.
        #[serde(rename = "isError")]
        is_error: bool,
        /// The start of its result.
        preview: String,
    },
    /// A human decided on the call.
    Approval {
        /// Call id.
        id: String,
        /// The decision.
        decision: Decision,
    },
}

/// `agent` compaction data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// Messages summarised.
    pub summarized: usize,
    /// Messages kept verbatim.
    pub kept: usize,
}

/// `exec.approval.resolved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResolved {
    /// The approval answered.
    pub approval_id: String,
    /// `allow-once`, `allow-always` or `deny`.
    pub decision: String,
}

/// `exec.approval.requested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequested {
    /// What `exec.approval.resolve` names.
    pub approval_id: String,
    /// The session whose run waits.
    pub session_key: String,
    /// The tool call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// What will run.
    pub summary: String,
    /// Why it needs approval.
    pub reason: String,
    /// What allow-always remembers.
    pub key: String,
    /// Whether allow-always may be answered (false: this act is decided each time, and
    /// allow-always counts as allow-once).
    #[serde(default = "yes")]
    pub allow_always: bool,
    /// How long the server waits before it denies.
    pub timeout_ms: u64,
}

fn yes() -> bool {
    true
}

/// `irc.status`: only the state — never the server, nick or channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IrcStatus {
    /// The session whose connection it is.
    pub session_key: String,
    /// `connecting`, `connected`, `joined`, `error` or `disconnected`.
    pub state: String,
}

pub use lurkbot_agent::heartbeat::HeartbeatEvent;

/// `cron`: what happened to a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronEvent {
    /// The job.
    pub job_id: String,
    /// `added`, `updated`, `removed`, `started` or `finished`.
    pub action: String,
    /// A finished run's status (`ok`, `error`, `skipped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A failed run's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A finished run's duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The job's next run afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at_ms: Option<u64>,
}

/// `tick`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tick {
    /// Server time, ms since the epoch.
    pub ts: u64,
}

/// `lagged`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lagged {
    /// Events this connection missed.
    pub dropped: u64,
}

/// `shutdown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shutdown {
    /// Why.
    pub reason: String,
}

/// An event frame: `{"type":"event","event","payload","seq"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct EventFrame {
    /// The event.
    pub event: Event,
    /// Per-connection sequence number, from 1.
    pub seq: u64,
}

impl EventFrame {
    /// The frame's JSON.
    pub fn to_value(&self) -> Value {
        let mut value = serde_json::to_value(&self.event).unwrap_or(Value::Null);
        if let Some(map) = value.as_object_mut() {
            map.insert("type".into(), "event".into());
            map.insert("seq".into(), self.seq.into());
        }
        value
    }

    /// Reads an event frame; `None` for any other frame, and for an event this build does not
    /// know (a newer server's), which a client may ignore.
    pub fn parse(frame: &Value) -> Option<Self> {
        if frame.get("type")? != "event" {
            return None;
        }
        let seq = frame.get("seq").and_then(Value::as_u64).unwrap_or(0);
        let payload = frame.get("payload").cloned().unwrap_or(Value::Null);
        fn read<T: serde::de::DeserializeOwned>(payload: Value) -> Option<T> {
            serde_json::from_value(payload).ok()
        }
        let event = match frame.get("event")?.as_str()? {
            "connect.challenge" => Event::ConnectChallenge(read(payload)?),
            "chat" => Event::Chat(read(payload)?),
            "agent" => Event::Agent(read(payload)?),
            "exec.approval.requested" => Event::ApprovalRequested(read(payload)?),
            "exec.approval.resolved" => Event::ApprovalResolved(read(payload)?),
            "tick" => Event::Tick(read(payload)?),
            "lagged" => Event::Lagged(read(payload)?),
            "shutdown" => Event::Shutdown(read(payload)?),
            "irc.status" => Event::IrcStatus(read(payload)?),
            "heartbeat" => Event::Heartbeat(read(payload)?),
            "cron" => Event::Cron(read(payload)?),
            "memory.indexed" => Event::MemoryIndexed(read(payload)?),
            "budget.exceeded" => Event::BudgetExceeded(read(payload)?),
            "canvas" => Event::Canvas(read(payload)?),
            _ => return None,
        };
        Some(Self { event, seq })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every event reads back from what the server writes, under the name it advertises.
    #[test]
    fn every_event_name_reads_back() {
        let heartbeat = lurkbot_agent::heartbeat::HeartbeatEvent {
            ts: 1,
            status: lurkbot_agent::heartbeat::HeartbeatStatus::Sent,
            reason: None,
            preview: Some("look".into()),
            channel: Some("telegram".into()),
            duration_ms: Some(5),
        };
        let samples = [
            Event::Heartbeat(heartbeat),
            Event::MemoryIndexed(lurkbot_memory::IndexReport::default()),
            Event::BudgetExceeded(BudgetExceeded {
                run_id: "run_1".into(),
                session_key: "agent:main:main".into(),
                message: "BudgetExceeded: daily".into(),
            }),
        ];
        for event in samples {
            let frame = EventFrame { event, seq: 3 };
            assert_eq!(EventFrame::parse(&frame.to_value()), Some(frame));
        }
        // A name this build does not know is skipped, not an error.
        assert_eq!(
            EventFrame::parse(&json!({"type": "event", "event": "newer.thing", "payload": {}})),
            None
        );
        assert_eq!(
            Event::NAMES.len(),
            13,
            "a new event needs its line in EventFrame::parse"
        );
    }

    fn round_trip(event: Event, wire: Value) {
        let frame = EventFrame { event, seq: 7 };
        let mut expected = wire;
        if let Some(map) = expected.as_object_mut() {
            map.insert("type".into(), "event".into());
            map.insert("seq".into(), 7.into());
        }
        assert_eq!(frame.to_value(), expected);
        assert_eq!(EventFrame::parse(&expected), Some(frame));
    }

    #[test]
    fn every_event_has_its_documented_wire_form() {
        let ids = |state: ChatState| ChatEvent {
            run_id: "run_1".into(),
            session_key: "agent:main:main".into(),
            state,
        };
        round_trip(
            Event::Chat(ids(ChatState::Delta { text: "Hi".into() })),
            json!({"event": "chat", "payload": {"runId": "run_1", "sessionKey": "agent:main:main", "state": "delta", "text": "Hi"}}),
        );
        round_trip(
            Event::Chat(ids(ChatState::Final {
                text: "Done".into(),
                model: "openai/m".into(),
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Usage::default()
                },
            })),
            json!({"event": "chat", "payload": {"runId": "run_1", "sessionKey": "agent:main:main", "state": "final", "text": "Done", "model": "openai/m", "usage": {"input_tokens": 3, "output_tokens": 4}}}),
        );
        round_trip(
            Event::Chat(ids(ChatState::Aborted)),
            json!({"event": "chat", "payload": {"runId": "run_1", "sessionKey": "agent:main:main", "state": "aborted"}}),
        );
        let agent = |stream: AgentStream| {
            Event::Agent(AgentEvent {
                run_id: "run_1".into(),
                session_key: "s".into(),
                stream,
            })
        };
        round_trip(
            agent(AgentStream::Lifecycle(Lifecycle {
                phase: LifecyclePhase::Start,
            })),
            json!({"event": "agent", "payload": {"runId": "run_1", "sessionKey": "s", "stream": "lifecycle", "data": {"phase": "start"}}}),
        );
        round_trip(
            agent(AgentStream::Tool(ToolPhase::End {
                id: "c1".into(),
                name: "read".into(),
                is_error: true,
                preview: "no".into(),
            })),
            json!({"event": "agent", "payload": {"runId": "run_1", "sessionKey": "s", "stream": "tool", "data": {"phase": "end", "id": "c1", "name": "read", "isError": true, "preview": "no"}}}),
        );
        round_trip(
            agent(AgentStream::Tool(ToolPhase::Approval {
                id: "c1".into(),
                decision: Decision::AllowAlways,
            })),
            json!({"event": "agent", "payload": {"runId": "run_1", "sessionKey": "s", "stream": "tool", "data": {"phase": "approval", "id": "c1", "decision": "allow-always"}}}),
        );
        round_trip(
            agent(AgentStream::Compaction(Compaction {
                summarized: 5,
                kept: 2,
            })),
            json!({"event": "agent", "payload": {"runId": "run_1", "sessionKey": "s", "stream": "compaction", "data": {"summarized": 5, "kept": 2}}}),
        );
        round_trip(
            Event::Lagged(Lagged { dropped: 3 }),
            json!({"event": "lagged", "payload": {"dropped": 3}}),
        );
        round_trip(
            Event::ApprovalRequested(ApprovalRequested {
                approval_id: "appr_1".into(),
                session_key: "s".into(),
                call_id: "c1".into(),
                tool: "terminal_exec".into(),
                summary: "zip".into(),
                reason: "r".into(),
                key: "k".into(),
                allow_always: false,
                timeout_ms: 10,
            }),
            json!({"event": "exec.approval.requested", "payload": {"approvalId": "appr_1", "sessionKey": "s", "callId": "c1", "tool": "terminal_exec", "summary": "zip", "reason": "r", "key": "k", "allowAlways": false, "timeoutMs": 10}}),
        );
    }

    #[test]
    fn names_match_the_variants_and_unknown_events_are_skipped() {
        let samples = [
            Event::ConnectChallenge(Challenge {
                nonce: "n".into(),
                ts: 1,
            }),
            Event::Tick(Tick { ts: 1 }),
            Event::Shutdown(Shutdown { reason: "r".into() }),
            Event::Lagged(Lagged { dropped: 1 }),
            Event::IrcStatus(IrcStatus {
                session_key: "agent:main:main".into(),
                state: "joined".into(),
            }),
            Event::Cron(CronEvent {
                job_id: "cron_1".into(),
                action: "finished".into(),
                status: Some("ok".into()),
                error: None,
                duration_ms: Some(3),
                next_run_at_ms: None,
            }),
            Event::Canvas(lurkbot_agent::canvas::CanvasChange {
                session_key: "agent:main:main".into(),
                action: "hide".into(),
                id: "w1".into(),
                title: "t".into(),
                html: None,
                pinned: false,
            }),
        ];
        for event in samples {
            let name = event.name();
            let wire = EventFrame { event, seq: 1 }.to_value();
            assert_eq!(wire["event"], name);
            assert!(Event::NAMES.contains(&name));
        }
        assert_eq!(
            EventFrame::parse(
                &json!({"type": "event", "event": "presence", "payload": {}, "seq": 1})
            ),
            None
        );
        assert_eq!(EventFrame::parse(&json!({"type": "res", "id": "1"})), None);
    }
}
