//! What can go wrong talking to a provider, classified so the caller knows whether to rotate
//! keys, back off, compact the conversation or give up.

/// The class of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The key was refused (401/403): rotate to another profile.
    Auth,
    /// Too many requests (429): rotate, then back off.
    RateLimited,
    /// The provider is overloaded (529, 503): rotate, then back off.
    Overloaded,
    /// The conversation does not fit the model's window: compact, then retry.
    ContextOverflow,
    /// A network failure or a 5xx: retry with back-off.
    Transient,
    /// The request itself is wrong (other 4xx): do not retry.
    BadRequest,
    /// The answer could not be understood.
    Protocol,
    /// No model or key is configured.
    NotConfigured,
}

impl ErrorKind {
    /// The kind's name (`rate_limited`), as a metric's `outcome` label.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
            Self::ContextOverflow => "context_overflow",
            Self::Transient => "transient",
            Self::BadRequest => "bad_request",
            Self::Protocol => "protocol",
            Self::NotConfigured => "not_configured",
        }
    }
}

/// A provider failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    /// Class.
    pub kind: ErrorKind,
    /// HTTP status, when there was one.
    pub status: Option<u16>,
    /// Readable message (never contains a key).
    pub message: String,
    /// `Retry-After`, in milliseconds, when the provider sent one.
    pub retry_after_ms: Option<u64>,
    /// The model's real context window, when an overflow error names it ("… context size
    /// (4096 tokens)", "maximum context length is 8192 tokens").
    pub context_window: Option<u64>,
}

impl LlmError {
    /// A failure of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            status: None,
            message: message.into(),
            retry_after_ms: None,
            context_window: None,
        }
    }

    /// Whether another key (auth profile) might succeed.
    pub fn rotates_profile(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Auth | ErrorKind::RateLimited | ErrorKind::Overloaded
        )
    }

    /// Whether the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Transient | ErrorKind::RateLimited | ErrorKind::Overloaded
        )
    }

    /// Classifies an HTTP error answer from its status and body.
    pub fn from_status(status: u16, body: &str, retry_after_ms: Option<u64>) -> Self {
        let lower = body.to_ascii_lowercase();
        let overflow = OVERFLOW_WORDINGS.iter().any(|w| lower.contains(w));
        let kind = match status {
            401 | 403 => ErrorKind::Auth,
            429 => ErrorKind::RateLimited,
            529 | 503 => ErrorKind::Overloaded,
            // Some servers (Ollama, llama.cpp builds) answer an overflow with a 5xx.
            400 | 413 | 422 | 500 if overflow => ErrorKind::ContextOverflow,
            500..=599 => ErrorKind::Transient,
            _ => ErrorKind::BadRequest,
        };
        let detail = error_message(body);
        let context_window = (kind == ErrorKind::ContextOverflow)
            .then(|| window_named_in(&lower))
            .flatten();
        Self {
            kind,
            status: Some(status),
            message: format!("the provider answered {status}: {detail}"),
            retry_after_ms,
            context_window,
        }
    }
}

/// How servers say a request does not fit the model's window (lower case): OpenAI and vLLM
/// ("maximum context length is N tokens", `context_length_exceeded`), llama.cpp's llama-server
/// ("request (N tokens) exceeds the available context size (M tokens)",
/// `exceed_context_size_error`), Ollama ("input length exceeds maximum context length", "prompt
/// too long; exceeded max context length"), Anthropic ("prompt is too long", "exceed context
/// limit").
const OVERFLOW_WORDINGS: &[&str] = &[
    "context_length_exceeded",
    "exceed_context_size",
    "maximum context length",
    "max context length",
    "context size",
    "context length",
    "context window",
    "context limit",
    "exceeds the context",
    "prompt is too long",
    "prompt too long",
    "too many tokens",
];

/// The window an overflow message names: the number of tokens after "context size (",
/// "context length is", "context length of" or "context window of".
fn window_named_in(lower: &str) -> Option<u64> {
    const LEADS: &[&str] = &[
        "context size (",
        "context length is ",
        "context length of ",
        "context window of ",
        "context window is ",
    ];
    LEADS.iter().find_map(|lead| {
        let at = lower.find(lead)? + lead.len();
        let digits: String = lower[at..]
            .chars()
            .skip_while(|c| *c == ' ')
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok().filter(|n| *n > 0)
    })
}

/// A reply stream that ended before its end marker.
pub(crate) fn cut_off() -> LlmError {
    LlmError::new(
        ErrorKind::Transient,
        "the reply stream ended before the provider finished it (connection dropped)",
    )
}

/// The readable part of an error body (`error.message` in both wire formats), cut short.
fn error_message(body: &str) -> String {
    let parsed: Option<String> = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .and_then(|m| m.as_str())
                .map(str::to_string)
        });
    let text = parsed.unwrap_or_else(|| body.trim().to_string());
    let cut: String = text.chars().take(300).collect();
    if cut.is_empty() {
        "(no details)".into()
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let e = LlmError::from_status(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
            None,
        );
        assert_eq!(e.kind, ErrorKind::ContextOverflow);
        assert!(e.message.contains("maximum context length"));
        assert_eq!(
            LlmError::from_status(400, "bad field", None).kind,
            ErrorKind::BadRequest
        );
        assert_eq!(LlmError::from_status(401, "", None).kind, ErrorKind::Auth);
        assert!(LlmError::from_status(429, "", Some(5)).rotates_profile());
        assert_eq!(
            LlmError::from_status(529, "", None).kind,
            ErrorKind::Overloaded
        );
        assert!(LlmError::from_status(502, "", None).is_retryable());
        assert!(!LlmError::from_status(404, "", None).is_retryable());
    }

    #[test]
    fn overflow_wordings_of_every_server_and_the_window_they_name() {
        for (status, body, window) in [
            (
                400,
                r#"{"error":{"code":400,"message":"request (4132 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error"}}"#,
                Some(4096),
            ),
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens in the messages.","type":"BadRequestError"}"#,
                Some(2048),
            ),
            (
                500,
                r#"{"error":{"message":"input length exceeds maximum context length"}}"#,
                None,
            ),
            (
                400,
                r#"{"error":"prompt too long; exceeded max context length by 12 tokens"}"#,
                None,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                None,
            ),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#,
                Some(128_000),
            ),
        ] {
            let e = LlmError::from_status(status, body, None);
            assert_eq!(e.kind, ErrorKind::ContextOverflow, "{body}");
            assert_eq!(e.context_window, window, "{body}");
        }
        assert_eq!(
            LlmError::from_status(500, "boom", None).kind,
            ErrorKind::Transient
        );
    }
}
