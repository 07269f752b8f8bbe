//! The wire protocol of `/ws` (ARCHITECTURE.md §6, OpenClaw-style): JSON text frames
//! `{"type":"req","id","method","params"}`, `{"type":"res","id","ok","payload"|"error"}` and
//! `{"type":"event","event","payload","seq"}`. Events are [`Event`]s. Shared by the
//! server, the CLI's remote client, the bench and the tests.

pub mod device;
mod event;
pub mod node;
mod out;
mod scope;
mod version;

pub use event::{
    AgentEvent, AgentStream, ApprovalRequested, ApprovalResolved, BudgetExceeded, Challenge,
    ChatEvent, ChatState, Compaction, CronEvent, Event, EventFrame, HeartbeatEvent, IrcStatus,
    Lagged, Lifecycle, LifecyclePhase, Shutdown, Tick, ToolPhase,
};
pub(crate) use out::Out;
pub use scope::{Grants, Scope};
pub use version::ProtocolVersion;

use serde::Deserialize;
use serde_json::{Value, json};

/// Protocol version spoken.
pub const PROTOCOL_VERSION: u64 = 1;
/// Largest frame accepted, in bytes.
pub const MAX_PAYLOAD: usize = 512 * 1024;
/// Interval of `tick` keep-alive events.
pub const TICK_INTERVAL_MS: u64 = 15_000;

/// Method names, defined once: the gateway's method table and its clients use these.
pub mod method {
    /// The handshake: the first request on every connection (answered by the socket, not the
    /// method table).
    pub const CONNECT: &str = "connect";
    /// Liveness and version.
    pub const HEALTH: &str = "health";
    /// Sessions, approvals and connections now.
    pub const STATUS: &str = "status";
    /// Start a turn.
    pub const CHAT_SEND: &str = "chat.send";
    /// A session's messages.
    pub const CHAT_HISTORY: &str = "chat.history";
    /// A reply's Markdown as safe HTML (the web UI's chat).
    pub const CHAT_RENDER: &str = "chat.render";
    /// A session's canvas widgets.
    pub const CANVAS_LIST: &str = "canvas.list";
    /// Abort a session's running turn.
    pub const CHAT_ABORT: &str = "chat.abort";
    /// Start a turn (OpenClaw's name).
    pub const AGENT: &str = "agent";
    /// Wait for a run's end.
    pub const AGENT_WAIT: &str = "agent.wait";
    /// An agent's sessions.
    pub const SESSIONS_LIST: &str = "sessions.list";
    /// A session's messages.
    pub const SESSIONS_HISTORY: &str = "sessions.history";
    /// A fresh transcript for a session key.
    pub const SESSIONS_RESET: &str = "sessions.reset";
    /// Remove a session.
    pub const SESSIONS_DELETE: &str = "sessions.delete";
    /// Run one terminal command.
    pub const TERMINAL_EXEC: &str = "terminal.exec";
    /// Answer a pending approval.
    pub const EXEC_APPROVAL_RESOLVE: &str = "exec.approval.resolve";
    /// A window of the gateway's log file.
    pub const LOGS_TAIL: &str = "logs.tail";
    /// Re-read config.toml.
    pub const GATEWAY_RELOAD: &str = "gateway.reload";
    /// Chooses the model (the web UI's welcome card): provider, model, base URL, key.
    pub const SETUP_MODEL: &str = "setup.model";
    /// Wait until a session runs nothing, background work included (`lurkbot agent --gateway`
    /// waits for its sub-agents' reports with it).
    pub const SESSIONS_WAIT: &str = "sessions.wait";
    /// The cron jobs.
    pub const CRON_LIST: &str = "cron.list";
    /// The scheduler's state: jobs, the next run, the last heartbeat.
    pub const CRON_STATUS: &str = "cron.status";
    /// Add a job (jobs.json's shape).
    pub const CRON_ADD: &str = "cron.add";
    /// Change a job (`jobId`, `patch`).
    pub const CRON_UPDATE: &str = "cron.update";
    /// Remove a job.
    pub const CRON_REMOVE: &str = "cron.remove";
    /// Run a job now (`mode`: `force` default, or `due`).
    pub const CRON_RUN: &str = "cron.run";
    /// A job's run log.
    pub const CRON_RUNS: &str = "cron.runs";
    /// The usage records summed, and the budgets' fill.
    pub const USAGE_SUMMARY: &str = "usage.summary";
    /// The channels' state and the pending pairings.
    pub const CHANNELS_STATUS: &str = "channels.status";
    /// The plugins' state (`{plugins: [{name, version, state, pid, restarts, provides,
    /// lastError}]}`).
    pub const PLUGINS_STATUS: &str = "plugins.status";
    /// Let a sender who asked for pairing talk to the agent (`{channel, code}`).
    pub const CHANNELS_PAIRING_APPROVE: &str = "channels.pairing.approve";
    /// Refuse a pairing request (`{channel, code}`).
    pub const CHANNELS_PAIRING_DENY: &str = "channels.pairing.deny";
    /// Put a message the platform refused for good back in the outbox's line (`{id}`).
    pub const OUTBOX_RETRY: &str = "outbox.retry";
    /// The managed Chromium's state.
    pub const BROWSER_STATUS: &str = "browser.status";
    /// Start the managed Chromium.
    pub const BROWSER_START: &str = "browser.start";
    /// Stop the managed Chromium.
    pub const BROWSER_STOP: &str = "browser.stop";
}

/// The body of `GET /health` and of the `health` method.
pub fn health() -> Value {
    json!({"ok": true, "version": env!("CARGO_PKG_VERSION")})
}

/// Events the server sends.
pub const EVENTS: &[&str] = Event::NAMES;

/// Error codes of `res` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The frame or its parameters are malformed.
    InvalidRequest,
    /// Missing or wrong token.
    Unauthorized,
    /// Unknown method or object.
    NotFound,
    /// The server cannot do it now (no model, shutting down, busy).
    Unavailable,
    /// The connection lacks the scope (OpenClaw's dialect; LurkBot's says `UNAUTHORIZED`).
    Forbidden,
}

impl ErrorCode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::NotFound => "NOT_FOUND",
            Self::Unavailable => "UNAVAILABLE",
            Self::Forbidden => "FORBIDDEN",
        }
    }
}

/// A failed method call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodError {
    /// Code.
    pub code: ErrorCode,
    /// What went wrong and what to do.
    pub message: String,
}

impl MethodError {
    /// An error with `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// `INVALID_REQUEST`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }
}

impl From<lurkbot_agent::AgentError> for MethodError {
    /// The agent could not do it now (a store or model failure): `UNAVAILABLE` with its reason.
    fn from(error: lurkbot_agent::AgentError) -> Self {
        Self::new(ErrorCode::Unavailable, error.to_string())
    }
}

/// A request frame.
#[derive(Debug, Clone, Deserialize)]
pub struct Request {
    /// Must be `req`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Echoed in the response.
    pub id: String,
    /// Method name.
    pub method: String,
    /// Parameters (an object; absent means `{}`).
    #[serde(default)]
    pub params: Value,
}

/// A frame as a client reads it: the answer to one of its requests, or an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// `{"type":"res","id","ok","payload"|"error"}`.
    Response {
        /// The request's id.
        id: String,
        /// The payload, or the error's code and message.
        result: Result<Value, (String, String)>,
    },
    /// `{"type":"event",…}`; `None` for an event this build does not know.
    Event(Option<EventFrame>),
}

impl Frame {
    /// Reads a frame; `None` for anything that is neither a response nor an event.
    pub fn parse(frame: &Value) -> Option<Self> {
        match frame.get("type")?.as_str()? {
            "res" => {
                let id = frame.get("id")?.as_str()?.to_string();
                let result = if frame.get("ok") == Some(&Value::Bool(true)) {
                    Ok(frame.get("payload").cloned().unwrap_or(Value::Null))
                } else {
                    let error = frame.get("error");
                    let text = |key: &str| {
                        error
                            .and_then(|e| e.get(key))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    Err((text("code"), text("message")))
                };
                Some(Self::Response { id, result })
            }
            "event" => Some(Self::Event(EventFrame::parse(frame))),
            _ => None,
        }
    }
}

/// A request frame, as a client sends it (the inverse of [`parse_request`]).
pub fn request(id: &str, method: &str, params: Value) -> Value {
    json!({"type": "req", "id": id, "method": method, "params": params})
}

/// The `connect` parameters of a client speaking [`PROTOCOL_VERSION`].
pub fn connect_params(client_id: &str, mode: &str, token: &str) -> Value {
    json!({"minProtocol": PROTOCOL_VERSION, "maxProtocol": PROTOCOL_VERSION, "role": "operator",
        "client": {"id": client_id, "version": env!("CARGO_PKG_VERSION"),
            "platform": std::env::consts::OS, "mode": mode},
        "auth": {"token": token}})
}

/// Parses a request frame.
///
/// # Errors
/// `INVALID_REQUEST` naming what is wrong; the id when it could be read.
pub fn parse_request(text: &str) -> Result<Request, (Option<String>, MethodError)> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| (None, MethodError::invalid(format!("not JSON: {e}"))))?;
    let id = value.get("id").and_then(Value::as_str).map(str::to_string);
    let request: Request = serde_json::from_value(value).map_err(|e| {
        (
            id.clone(),
            MethodError::invalid(format!(
                "not a request frame ({e}); expected {{\"type\":\"req\",\"id\",\"method\",\"params\"}}"
            )),
        )
    })?;
    if request.kind != "req" {
        return Err((
            id,
            MethodError::invalid(format!("frame type '{}' is not 'req'", request.kind)),
        ));
    }
    if !(request.params.is_object() || request.params.is_null()) {
        return Err((id, MethodError::invalid("params must be an object")));
    }
    Ok(request)
}

/// An event frame whose payload is already shaped (OpenClaw's dialect, the `openclaw` module).
pub fn shaped_event(event: &str, payload: Value, seq: u64) -> Value {
    json!({"type": "event", "event": event, "payload": payload, "seq": seq})
}

/// A successful response.
pub fn ok(id: &str, payload: Value) -> Value {
    json!({"type": "res", "id": id, "ok": true, "payload": payload})
}

/// A failed response.
pub fn err(id: Option<&str>, error: &MethodError) -> Value {
    json!({"type": "res", "id": id, "ok": false,
        "error": {"code": error.code.as_str(), "message": error.message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_frames() {
        let r = parse_request(r#"{"type":"req","id":"1","method":"health"}"#).unwrap();
        assert_eq!((r.id.as_str(), r.method.as_str()), ("1", "health"));
        let (id, e) = parse_request(r#"{"type":"event","id":"2","method":"x"}"#).unwrap_err();
        assert_eq!(
            (id.as_deref(), e.code),
            (Some("2"), ErrorCode::InvalidRequest)
        );
        assert!(parse_request("not json").is_err());
        assert!(parse_request(r#"{"type":"req","id":"3","method":"x","params":[1]}"#).is_err());
        assert_eq!(
            err(Some("4"), &MethodError::new(ErrorCode::NotFound, "no"))["error"]["code"],
            "NOT_FOUND"
        );
    }
}

#[cfg(test)]
mod frame_tests {
    use super::*;

    #[test]
    fn a_client_reads_back_what_the_server_writes() {
        let error = MethodError::new(ErrorCode::NotFound, "no such thing");
        assert_eq!(
            Frame::parse(&ok("r1", json!({"a": 1}))),
            Some(Frame::Response {
                id: "r1".into(),
                result: Ok(json!({"a": 1}))
            })
        );
        assert_eq!(
            Frame::parse(&err(Some("r2"), &error)),
            Some(Frame::Response {
                id: "r2".into(),
                result: Err(("NOT_FOUND".into(), "no such thing".into()))
            })
        );
        let tick = EventFrame {
            event: Event::Tick(Tick { ts: 5 }),
            seq: 3,
        };
        assert_eq!(
            Frame::parse(&tick.to_value()),
            Some(Frame::Event(Some(tick)))
        );
        assert_eq!(Frame::parse(&request("r3", "health", json!({}))), None);
    }
}
