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
}

impl LlmError {
    /// A failure of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            status: None,
            message: message.into(),
            retry_after_ms: None,
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
        let overflow = lower.contains("context_length_exceeded")
            || lower.contains("maximum context length")
            || lower.contains("prompt is too long")
            || lower.contains("context window")
            || lower.contains("exceeds the context")
            || lower.contains("too many tokens");
        let kind = match status {
            401 | 403 => ErrorKind::Auth,
            429 => ErrorKind::RateLimited,
            529 | 503 => ErrorKind::Overloaded,
            400 | 413 if overflow => ErrorKind::ContextOverflow,
            500..=599 => ErrorKind::Transient,
            _ => ErrorKind::BadRequest,
        };
        let detail = error_message(body);
        Self {
            kind,
            status: Some(status),
            message: format!("the provider answered {status}: {detail}"),
            retry_after_ms,
        }
    }
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
}
