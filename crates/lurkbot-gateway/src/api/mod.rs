//! The HTTP API: OpenAI-compatible `/v1/*` (with pictures and `Idempotency-Key`) and the
//! webhooks.

pub(crate) mod hooks;
pub(crate) mod idempotency;
pub(crate) mod images;
pub(crate) mod openai;
