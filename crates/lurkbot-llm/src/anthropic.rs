//! Anthropic Messages (`POST {base}/v1/messages`, `stream: true`). Tool results of one turn are
//! sent together in one user message, as the API requires; `tool_use` input arrives as JSON
//! fragments and is handed on complete at `content_block_stop`.

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::error::{ErrorKind, LlmError};
use crate::http::post_stream;
use crate::types::{ChatRequest, ChatResponse, Message, Role, StreamEvent, ToolCall};

/// API version header value.
const VERSION: &str = "2023-06-01";

/// The request body.
pub fn body(request: &ChatRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for m in &request.messages {
        let (role, blocks) = blocks(m);
        match messages.last_mut() {
            Some(last) if last["role"] == role && m.role == Role::Tool => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "system": request.system,
        "messages": messages,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

fn blocks(m: &Message) -> (&'static str, Vec<Value>) {
    match m.role {
        Role::User => {
            let mut out = vec![json!({"type": "text", "text": m.content})];
            out.extend(m.images.iter().map(image_block));
            ("user", out)
        }
        Role::Assistant => {
            let mut out = Vec::new();
            if !m.content.is_empty() {
                out.push(json!({"type": "text", "text": m.content}));
            }
            for call in &m.tool_calls {
                let input: Value =
                    serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
                out.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
            ("assistant", out)
        }
        Role::Tool => {
            let content = if m.images.is_empty() {
                json!(m.content)
            } else {
                let mut parts = vec![json!({"type": "text", "text": m.content})];
                parts.extend(m.images.iter().map(image_block));
                Value::Array(parts)
            };
            (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": content,
                    "is_error": m.is_error,
                })],
            )
        }
    }
}

/// An `image` content block with its base64 source.
fn image_block(image: &crate::types::ImagePart) -> Value {
    json!({"type": "image", "source": {
        "type": "base64",
        "media_type": image.media_type,
        "data": image.data.as_deref().unwrap_or_default(),
    }})
}

/// Sends the request and streams the answer.
///
/// # Errors
/// Classified provider failures.
pub(crate) async fn chat(
    http: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    request: &ChatRequest,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<ChatResponse, LlmError> {
    let mut headers = HeaderMap::new();
    headers.insert("anthropic-version", HeaderValue::from_static(VERSION));
    if let Some(key) = key
        && let Ok(value) = HeaderValue::from_str(key)
    {
        headers.insert("x-api-key", value);
    }
    let url = format!("{}/v1/messages", base_url.trim_end_matches('/'));
    let mut state = Gather::default();
    post_stream(
        http,
        &url,
        headers,
        body(request).to_string().into_bytes(),
        &mut |event| {
            let data: Value = serde_json::from_str(&event.data).map_err(|e| {
                LlmError::new(ErrorKind::Protocol, format!("unreadable stream event: {e}"))
            })?;
            state.event(&data, on_event)
        },
    )
    .await?;
    if !state.stopped {
        return Err(crate::error::cut_off());
    }
    Ok(state.response)
}

/// The reply being gathered.
#[derive(Default)]
struct Gather {
    response: ChatResponse,
    /// The open tool_use block: index, call so far.
    open: Option<(u64, ToolCall)>,
    /// Whether `message_stop` arrived.
    stopped: bool,
}

impl Gather {
    fn event(
        &mut self,
        data: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, LlmError> {
        match data["type"].as_str().unwrap_or_default() {
            "message_start" => {
                // Anthropic counts cache reads and writes apart from `input_tokens`; LurkBot's
                // input is all of them, of which the reads are "cached".
                let field = |name: &str| {
                    data.pointer(&format!("/message/usage/{name}"))
                        .and_then(Value::as_u64)
                        .unwrap_or_default()
                };
                let cached = field("cache_read_input_tokens");
                self.response.usage.input_tokens =
                    field("input_tokens") + cached + field("cache_creation_input_tokens");
                self.response.usage.cached_input_tokens = cached;
            }
            "content_block_start" => {
                let block = &data["content_block"];
                if block["type"] == "tool_use" {
                    self.open = Some((
                        data["index"].as_u64().unwrap_or_default(),
                        ToolCall {
                            id: block["id"].as_str().unwrap_or_default().to_string(),
                            name: block["name"].as_str().unwrap_or_default().to_string(),
                            arguments: String::new(),
                        },
                    ));
                }
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap_or_default() {
                    "text_delta" => {
                        let text = delta["text"].as_str().unwrap_or_default();
                        if !text.is_empty() {
                            self.response.text.push_str(text);
                            on_event(StreamEvent::Text(text.to_string()));
                        }
                    }
                    "input_json_delta" => {
                        if let Some((_, call)) = self.open.as_mut() {
                            call.arguments
                                .push_str(delta["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap_or_default();
                if self.open.as_ref().is_some_and(|(i, _)| *i == index)
                    && let Some((_, mut call)) = self.open.take()
                {
                    if call.arguments.trim().is_empty() {
                        call.arguments = "{}".into();
                    }
                    on_event(StreamEvent::ToolCall(call.clone()));
                    self.response.tool_calls.push(call);
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.response.stop_reason = reason.to_string();
                }
                if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.response.usage.output_tokens = out;
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(false);
            }
            "error" => {
                let kind = data
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let status = match kind {
                    "overloaded_error" => 529,
                    "rate_limit_error" => 429,
                    "authentication_error" => 401,
                    "invalid_request_error" => 400,
                    _ => 500,
                };
                return Err(LlmError::from_status(status, &data.to_string(), None));
            }
            _ => {}
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_and_writes_count_as_input_and_reads_as_cached() {
        let mut gather = Gather::default();
        let start = serde_json::json!({"type": "message_start", "message": {"usage": {
            "input_tokens": 20, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 80,
            "output_tokens": 1}}});
        let _ = gather.event(&start, &mut |_| {});
        assert_eq!(gather.response.usage.input_tokens, 1_000);
        assert_eq!(gather.response.usage.cached_input_tokens, 900);
    }
}
