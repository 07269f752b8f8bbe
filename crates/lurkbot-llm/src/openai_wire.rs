//! The Chat Completions request body, written straight from the request's typed messages: no
//! JSON tree of the whole conversation is built (and each string copied into it) on every
//! model call, only the bytes that are sent (ARCHITECTURE.md §9, "A turn's CPU").

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use std::sync::Arc;

use crate::types::{ChatRequest, ImagePart, Message, Role, ToolCall, ToolSpec};

/// The body as sent.
#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    max_tokens: u32,
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    tools: Tools<'a>,
}

impl<'a> Body<'a> {
    /// The body of `request`.
    pub(crate) fn of(request: &'a ChatRequest) -> Self {
        Self {
            model: &request.model,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            max_tokens: request.max_tokens,
            messages: Messages(request),
            reasoning_effort: request.reasoning.as_deref().filter(|e| *e != "off"),
            tools: Tools(&request.tools),
        }
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The system prompt, then the conversation.
struct Messages<'a>(&'a ChatRequest);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let messages = &self.0.messages;
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(&Said {
            role: "system",
            content: &self.0.system,
        })?;
        // Chat Completions has no image in a tool message: the images of a run of tool results
        // follow it as one user message (the tool messages must stay together after their call).
        let mut run_from = None;
        for (i, m) in messages.iter().enumerate() {
            seq.serialize_element(&Wire(m))?;
            if m.role != Role::Tool {
                continue;
            }
            let from = *run_from.get_or_insert(i);
            if messages.get(i + 1).is_none_or(|n| n.role != Role::Tool) {
                run_from = None;
                let run = &messages[from..=i];
                if run.iter().any(|m| !m.images.is_empty()) {
                    seq.serialize_element(&ToolImages(run))?;
                }
            }
        }
        seq.end()
    }
}

/// A message of plain text.
#[derive(Serialize)]
struct Said<'a> {
    role: &'static str,
    content: &'a str,
}

/// One message of the conversation as Chat Completions has it.
struct Wire<'a>(&'a Message);

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        match m.role {
            Role::User if m.images.is_empty() => Said {
                role: "user",
                content: &m.content,
            }
            .serialize(serializer),
            Role::User => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("role", "user")?;
                map.serialize_entry("content", &TextAndImages(&m.content, &m.images))?;
                map.end()
            }
            Role::Assistant if m.tool_calls.is_empty() => Said {
                role: "assistant",
                content: &m.content,
            }
            .serialize(serializer),
            Role::Assistant => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("role", "assistant")?;
                let content = Some(m.content.as_str()).filter(|c| !c.is_empty());
                map.serialize_entry("content", &content)?;
                map.serialize_entry("tool_calls", &Calls(&m.tool_calls))?;
                map.end()
            }
            Role::Tool => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", m.tool_call_id.as_deref().unwrap_or(""))?;
                map.serialize_entry("content", &m.content)?;
                map.end()
            }
        }
    }
}

/// A user message's text and pictures.
struct TextAndImages<'a>(&'a str, &'a [ImagePart]);

impl Serialize for TextAndImages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(1 + self.1.len()))?;
        seq.serialize_element(&TextPart::new(self.0))?;
        for image in self.1 {
            seq.serialize_element(&ImageUrl::of(image))?;
        }
        seq.end()
    }
}

/// The images of a run of tool results, as the user message that follows it.
struct ToolImages<'a>(&'a [Message]);

impl Serialize for ToolImages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &RunImages(self.0))?;
        map.end()
    }
}

struct RunImages<'a>(&'a [Message]);

impl Serialize for RunImages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(&TextPart::new(
            "The images the tool results above refer to:",
        ))?;
        for image in self.0.iter().flat_map(|m| &m.images) {
            seq.serialize_element(&ImageUrl::of(image))?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct TextPart<'a> {
    r#type: &'static str,
    text: &'a str,
}

impl<'a> TextPart<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            r#type: "text",
            text,
        }
    }
}

#[derive(Serialize)]
struct ImageUrl {
    r#type: &'static str,
    image_url: Url,
}

#[derive(Serialize)]
struct Url {
    url: String,
}

impl ImageUrl {
    fn of(image: &ImagePart) -> Self {
        Self {
            r#type: "image_url",
            image_url: Url {
                url: image.data_url(),
            },
        }
    }
}

/// An assistant message's tool calls.
struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|c| Typed {
            id: Some(&c.id),
            r#type: "function",
            function: Function {
                name: &c.name,
                description: None,
                parameters: None,
                arguments: Some(&c.arguments),
            },
        }))
    }
}

/// The tools offered.
struct Tools<'a>(&'a [Arc<ToolSpec>]);

impl Tools<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|t| Typed {
            id: None,
            r#type: "function",
            function: Function {
                name: &t.name,
                description: Some(&t.description),
                parameters: Some(&t.parameters),
                arguments: None,
            },
        }))
    }
}

/// `{"type": "function", "function": …}`: a tool offered, or (with its id) a call made.
#[derive(Serialize)]
struct Typed<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    r#type: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn image(data: &str) -> ImagePart {
        ImagePart {
            media_type: "image/png".into(),
            path: "workspace/a.png".into(),
            data: Some(Arc::from(data)),
        }
    }

    /// Every kind of message, as Chat Completions documents it.
    #[test]
    fn every_message_kind_is_written_as_chat_completions_has_it() {
        let mut photo = Message::user("look");
        photo.images.push(image("UA=="));
        let mut shot = Message::tool("c2", "shot taken", false);
        shot.images.push(image("UQ=="));
        let request = ChatRequest {
            model: "m".into(),
            system: "Be brief.".into(),
            messages: vec![
                Message::user("hi"),
                photo,
                Message::assistant(
                    "",
                    vec![
                        ToolCall {
                            id: "c1".into(),
                            name: "read".into(),
                            arguments: "{\"path\":\"a\"}".into(),
                        },
                        ToolCall {
                            id: "c2".into(),
                            name: "browser".into(),
                            arguments: "{}".into(),
                        },
                    ],
                ),
                Message::tool("c1", "text", false),
                shot,
                Message::assistant("done", Vec::new()),
            ],
            tools: vec![Arc::new(ToolSpec {
                name: "read".into(),
                description: "Reads.".into(),
                parameters: json!({"type": "object"}),
            })],
            max_tokens: 100,
            reasoning: Some("low".into()),
        };
        let sent: serde_json::Value =
            serde_json::from_slice(&serde_json::to_vec(&Body::of(&request)).unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({
                "model": "m", "stream": true, "stream_options": {"include_usage": true},
                "max_tokens": 100,
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "hi"},
                    {"role": "user", "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,UA=="}}]},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                        {"id": "c2", "type": "function",
                         "function": {"name": "browser", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "text"},
                    {"role": "tool", "tool_call_id": "c2", "content": "shot taken"},
                    {"role": "user", "content": [
                        {"type": "text", "text": "The images the tool results above refer to:"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,UQ=="}}]},
                    {"role": "assistant", "content": "done"}],
                "reasoning_effort": "low",
                "tools": [{"type": "function", "function": {
                    "name": "read", "description": "Reads.", "parameters": {"type": "object"}}}]
            })
        );
        // Nothing offered, no effort: neither key is sent.
        let bare = ChatRequest {
            tools: Vec::new(),
            reasoning: Some("off".into()),
            messages: Vec::new(),
            ..request
        };
        let text = serde_json::to_string(&Body::of(&bare)).unwrap();
        assert!(
            !text.contains("tools") && !text.contains("reasoning_effort"),
            "{text}"
        );
    }
}
