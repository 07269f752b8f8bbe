//! LurkBot's model providers: the OpenAI Chat Completions wire format (OpenAI and every
//! compatible server) and Anthropic Messages, both streaming with tool calls and usage; errors
//! classified for rotation, retry and compaction; auth profiles with cooldown and model
//! failover; the embeddings endpoint memory search uses.

mod anthropic;
mod embeddings;
mod error;
mod failover;
#[cfg(feature = "fake")]
pub mod fake;
mod http;
mod openai;
mod openai_wire;
mod provider;
pub mod sse;
mod types;

pub use embeddings::EmbeddingsClient;
pub use error::{ErrorKind, LlmError};
pub use failover::{Answered, Failover, ProfileState, cooldown_ms};
pub use provider::{AuthProfile, Endpoint, ModelRef, ProviderKind};
pub use types::{
    ChatRequest, ChatResponse, ImagePart, Message, Role, StreamEvent, ToolCall, ToolSpec, Usage,
};

/// Request bodies as sent, for tests and debugging.
pub mod wire {
    pub use crate::anthropic::body as anthropic_body;
    pub use crate::openai::body as openai_body;
}
