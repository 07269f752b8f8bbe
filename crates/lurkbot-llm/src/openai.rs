//! OpenAI Chat Completions (`POST {base}/chat/completions`, `stream: true`): the wire format of
//! OpenAI and of every compatible server (Ollama, vLLM, llama.cpp's llama-server, OpenRouter …).
//! Tool-call fragments are gathered by `index` and handed on complete, after the stream ends.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::error::{ErrorKind, LlmError};
use crate::http::post_stream;
use crate::types::{ChatRequest, ChatResponse, Message, Role, StreamEvent, ToolCall, Usage};

/// The request body.
pub fn body(request: &ChatRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    // Chat Completions has no image in a tool message: the images of a run of tool results
    // follow it as one user message (the tool messages must stay together after their call).
    let mut shown: Vec<Value> = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        messages.push(message(m));
        if m.role == Role::Tool {
            shown.extend(m.images.iter().map(image_part));
            let run_ends = request
                .messages
                .get(i + 1)
                .is_none_or(|n| n.role != Role::Tool);
            if run_ends && !shown.is_empty() {
                let mut content = vec![
                    json!({"type": "text", "text": "The images the tool results above refer to:"}),
                ];
                content.append(&mut shown);
                messages.push(json!({"role": "user", "content": content}));
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": request.max_tokens,
        "messages": messages,
    });
    if let Some(effort) = request.reasoning.as_deref().filter(|e| *e != "off") {
        body["reasoning_effort"] = json!(effort);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
    }
    body
}

fn message(m: &Message) -> Value {
    match m.role {
        Role::User if m.images.is_empty() => json!({"role": "user", "content": m.content}),
        Role::User => {
            let mut content = vec![json!({"type": "text", "text": m.content})];
            content.extend(m.images.iter().map(image_part));
            json!({"role": "user", "content": content})
        }
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": m.content})
        }
        Role::Assistant => json!({
            "role": "assistant",
            "content": if m.content.is_empty() { Value::Null } else { m.content.clone().into() },
            "tool_calls": m.tool_calls.iter().map(|c| json!({
                "id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.arguments}})).collect::<Vec<_>>(),
        }),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        }),
    }
}

fn image_part(image: &crate::types::ImagePart) -> Value {
    json!({"type": "image_url", "image_url": {"url": image.data_url()}})
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
    post_stream(http, &url, headers, &body(request), &mut |event| {
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
