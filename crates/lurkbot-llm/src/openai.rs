//! OpenAI Chat Completions (`POST {base}/chat/completions`, `stream: true`): the wire format of
//! OpenAI and of every compatible server (Ollama, vLLM, llama.cpp's llama-server, OpenRouter …).
//! Tool-call fragments are gathered by `index` and handed on complete, after the stream ends.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::Value;

use crate::error::{ErrorKind, LlmError};
use crate::http::post_stream;
use crate::openai_wire::Body;
use crate::types::{ChatRequest, ChatResponse, StreamEvent, ToolCall, Usage};

/// The request body (as JSON, for tests and debugging: what is sent is written straight from
/// the request, with no JSON tree built).
pub fn body(request: &ChatRequest) -> Value {
    serde_json::to_value(Body::of(request)).unwrap_or_default()
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
    if let Some(key) = key
        && let Ok(value) = HeaderValue::from_str(&format!("Bearer {key}"))
    {
        headers.insert(AUTHORIZATION, value);
    }
    let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
    let mut state = Gather::default();
    let mut done = false;
    post_stream(http, &url, headers, wire_bytes(request)?, &mut |event| {
        if event.data.trim() == "[DONE]" {
            done = true;
            return Ok(false);
        }
        let chunk: Value = serde_json::from_str(&event.data).map_err(|e| {
            LlmError::new(ErrorKind::Protocol, format!("unreadable stream chunk: {e}"))
        })?;
        state.chunk(&chunk, on_event)?;
        Ok(true)
    })
    .await?;
    if !done {
        return Err(crate::error::cut_off());
    }
    Ok(state.finish(on_event))
}

/// The bytes sent for `request`.
fn wire_bytes(request: &ChatRequest) -> Result<Vec<u8>, LlmError> {
    serde_json::to_vec(&Body::of(request)).map_err(|e| {
        LlmError::new(
            ErrorKind::Protocol,
            format!("cannot write the request: {e}"),
        )
    })
}

/// The reply being gathered.
#[derive(Default)]
struct Gather {
    response: ChatResponse,
    calls: Vec<ToolCall>,
}

impl Gather {
    fn chunk(
        &mut self,
        chunk: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), LlmError> {
        if let Some(error) = chunk.get("error") {
            let status = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(500);
            return Err(LlmError::from_status(status, &chunk.to_string(), None));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.response.usage = Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or_default(),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or_default(),
                cached_input_tokens: usage
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
            };
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.response.stop_reason = reason.to_string();
        }
        let delta = &choice["delta"];
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.response.text.push_str(text);
            on_event(StreamEvent::Text(text.to_string()));
        }
        for part in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = part
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(self.calls.len());
            if index > 128 {
                return Err(LlmError::new(
                    ErrorKind::Protocol,
                    "more than 128 tool calls in one reply",
                ));
            }
            while self.calls.len() <= index {
                self.calls.push(ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let call = &mut self.calls[index];
            if let Some(id) = part.get("id").and_then(Value::as_str) {
                call.id = id.to_string();
            }
            if let Some(name) = part.pointer("/function/name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(args) = part.pointer("/function/arguments").and_then(Value::as_str) {
                call.arguments.push_str(args);
            }
        }
        Ok(())
    }

    fn finish(mut self, on_event: &mut (dyn FnMut(StreamEvent) + Send)) -> ChatResponse {
        for (i, mut call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                continue;
            }
            if call.id.is_empty() {
                call.id = format!("call_{i}");
            }
            if call.arguments.trim().is_empty() {
                call.arguments = "{}".into();
            }
            on_event(StreamEvent::ToolCall(call.clone()));
            self.response.tool_calls.push(call);
        }
        self.response
    }
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn cached_prompt_tokens_are_read_from_the_details() {
        let mut gather = Gather::default();
        let chunk = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 1200,
            "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 1024}}});
        let _ = gather.chunk(&chunk, &mut |_| {});
        assert_eq!(gather.response.usage.input_tokens, 1_200);
        assert_eq!(gather.response.usage.cached_input_tokens, 1_024);
        assert_eq!(gather.response.usage.output_tokens, 30);
    }
}
