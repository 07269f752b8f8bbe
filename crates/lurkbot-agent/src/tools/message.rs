//! `message`: sends text to a channel (`webchat`, `irc`, `last`) through the runtime's
//! delivery path — the same one cron `announce` and heartbeat alerts use.

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, string_arg};
use crate::runtime::{CHANNELS, Outbound};

/// `message`.
pub(crate) struct MessageTool;

impl Tool for MessageTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "message".into(),
            description: "Send a message. to: #channel or nick on irc, an allowed chat id on telegram, a phone number on whatsapp or signal (+ and country code); webchat is the web UI, last where the owner last talked.".into(),
            parameters: json!({"type": "object", "properties": {
                "channel": {"type": "string", "enum": CHANNELS},
                "to": {"type": "string"},
                "text": {"type": "string"}},
                "required": ["channel", "text"]}),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let runtime = match ctx.runtime("message") {
                Ok(r) => r,
                Err(e) => return e,
            };
            let (channel, text) = match (string_arg(args, "channel"), string_arg(args, "text")) {
                (Ok(c), Ok(t)) => (c.to_ascii_lowercase(), t.to_string()),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            if !CHANNELS.contains(&channel.as_str()) {
                return ToolOutput::error(format!(
                    "unknown channel '{channel}'; use one of: {}",
                    CHANNELS.join(", ")
                ));
            }
            if text.trim().is_empty() {
                return ToolOutput::error("the text is empty");
            }
            let outbound = Outbound {
                channel,
                to: args.get("to").and_then(Value::as_str).map(str::to_string),
                text,
                from: ctx.session.clone(),
                asker: crate::gate::Asker::Model,
            };
            match runtime.deliver(outbound).await {
                Ok(where_to) => ToolOutput::ok(format!("delivered to {where_to}")),
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CHANNELS;

    #[test]
    fn every_platform_can_be_messaged() {
        for name in lurkbot_core::CHANNEL_NAMES {
            assert!(
                CHANNELS.contains(name),
                "the message tool cannot reach {name}"
            );
        }
    }
}
