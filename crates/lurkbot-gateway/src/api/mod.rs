//! The HTTP API: OpenAI-compatible `/v1/*` (with pictures and `Idempotency-Key`), the
//! webhooks, and WhatsApp's Cloud API webhook.

pub(crate) mod hooks;
pub(crate) mod idempotency;
pub(crate) mod images;
pub(crate) mod openai;
pub(crate) mod whatsapp;
