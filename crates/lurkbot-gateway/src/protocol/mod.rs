//! The wire protocol of `/ws` (ARCHITECTURE.md §6, OpenClaw-style): JSON text frames
//! `{"type":"req","id","method","params"}`, `{"type":"res","id","ok","payload"|"error"}` and
//! `{"type":"event","event","payload","seq"}`. Events are the types of [`event`]. Shared by the
//! server, the CLI's remote client, the bench and the tests.

mod event;

pub use event::{
    AgentEvent, AgentStream, ApprovalRequested, Challenge, ChatEvent, ChatState, Compaction, Event,
    EventFrame, Lagged, Lifecycle, LifecyclePhase, Shutdown, Tick, ToolPhase,
};

use serde::Deserialize;
use serde_json::{Value, json};

/// Protocol version spoken.
pub const PROTOCOL_VERSION: u64 = 1;
/// Largest frame accepted, in bytes.
pub const MAX_PAYLOAD: usize = 512 * 1024;
/// Interval of `tick` keep-alive events.
pub const TICK_INTERVAL_MS: u64 = 15_000;

/// Methods the server answers.
pub const METHODS: &[&str] = &[
    "health",
    "status",
    "chat.send",
    "chat.history",
    "chat.abort",
    "agent",
    "agent.wait",
    "sessions.list",
    "sessions.history",
    "sessions.reset",
    "sessions.delete",
    "terminal.exec",
    "exec.approval.resolve",
];

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
}

impl ErrorCode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::NotFound => "NOT_FOUND",
            Self::Unavailable => "UNAVAILABLE",
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
