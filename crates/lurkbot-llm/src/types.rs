//! The provider-neutral conversation model every provider translates to and from.

use serde::{Deserialize, Serialize};

/// Who said something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (or the system speaking for them, e.g. a cron job).
    User,
    /// The model.
    Assistant,
    /// A tool's answer to one call.
    Tool,
}

/// A call the model asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (echoed back with the result).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as JSON text, exactly as the model produced them.
    pub arguments: String,
}

/// An image shown to the model with a message. The transcript keeps it by reference (`path`,
/// home-relative); the base64 data is loaded before a request and never written to disk again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// `image/jpeg`, `image/png`, …
    pub media_type: String,
    /// The file, relative to the home.
    pub path: String,
    /// Its bytes as base64, once loaded.
    #[serde(skip)]
    pub data: Option<std::sync::Arc<str>>,
}

impl ImagePart {
    /// The `data:` URL OpenAI takes (empty data until loaded).
    pub fn data_url(&self) -> String {
        format!(
            "data:{};base64,{}",
            self.media_type,
            self.data.as_deref().unwrap_or_default()
        )
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who.
    pub role: Role,
    /// Text (for a tool message: the result).
    #[serde(default)]
    pub content: String,
    /// Calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool message: whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Images shown with the message (a user's photo, the `image` tool's result).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImagePart>,
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
            images: Vec::new(),
        }
    }

    /// An assistant message, possibly with calls.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            role: Role::Assistant,
            content: text.into(),
            tool_calls,
            tool_call_id: None,
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A tool result.
    pub fn tool(call_id: impl Into<String>, text: impl Into<String>, is_error: bool) -> Self {
        Self {
            role: Role::Tool,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            is_error,
            images: Vec::new(),
        }
    }

    /// The same message showing `images` too.
    #[must_use]
    pub fn with_images(mut self, images: Vec<ImagePart>) -> Self {
        self.images = images;
        self
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Model name as the provider knows it.
    pub model: String,
    /// System prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered (shared: a turn offers the same specs on every call).
    pub tools: Vec<std::sync::Arc<ToolSpec>>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Reasoning effort (`minimal`, `low`, `medium`, `high`); `None` or `off` sends nothing.
    /// Sent as OpenAI's `reasoning_effort`; not sent to Anthropic (extended thinking needs its
    /// signed thinking blocks replayed with tool use, which transcripts do not keep yet).
    pub reasoning: Option<String>,
}

/// Token counts the provider reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Something that arrived while streaming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// More reply text.
    Text(String),
    /// A tool call, complete with its arguments.
    ToolCall(ToolCall),
}

/// The whole answer of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatResponse {
    /// Reply text.
    pub text: String,
    /// Calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
    /// Why the model stopped (`stop`, `tool_calls`, `length`, `end_turn`, `tool_use`, …).
    pub stop_reason: String,
}
