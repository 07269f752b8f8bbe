//! `tts`: the model speaks (ARCHITECTURE.md §5.2). The text becomes an OGG/Opus voice note in
//! `workspace/audio/` through the configured speech providers; on a channel the note is sent
//! as a voice message with the answer, in the web UI it plays in the chat.

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::fs::{resolve_path, writable, write_checked};
use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};
use crate::speech::{AUDIO_DIR, tts_setup};
use crate::web::settings_client;

/// `tts`.
pub(crate) struct TtsTool;

impl Tool for TtsTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "tts".into(),
            description: "Speak text as a voice note; on a channel it is sent as voice.".into(),
            parameters: schema(
                r#"{"type": "object", "properties": {
                "text": {"type": "string"},
                "voice": {"type": "string"}},
                "required": ["text"]}"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let text = match string_arg(args, "text") {
                Ok(t) => t,
                Err(e) => return e,
            };
            let voice = args.get("voice").and_then(Value::as_str);
            let setup = tts_setup(ctx.home, ctx.config);
            let client = match settings_client(setup.timeout) {
                Ok(c) => c,
                Err(e) => return ToolOutput::error(e),
            };
            let spoken = match lurkbot_media::speech::speak(&client, &setup, text, voice).await {
                Ok(s) => s,
                Err(e) => return ToolOutput::error(format!("{}: {e}", e.code())),
            };
            let name = format!(
                "tts-{}-{}.ogg",
                chrono::Utc::now().format("%Y%m%d-%H%M%S"),
                lurkbot_core::random_hex(3)
            );
            let path = match resolve_path(ctx, &format!("{AUDIO_DIR}/{name}")) {
                Ok(p) => p,
                Err(e) => return e,
            };
            if let Err(denied) = writable(ctx, &path) {
                return denied;
            }
            if let Err(e) = write_checked(&path, &spoken.ogg) {
                return ToolOutput::error(format!("cannot keep the voice note: {e}"));
            }
            let mut answer = json!({
                "path": path.relative(),
                "seconds": (spoken.seconds * 10.0).round() / 10.0,
                "bytes": spoken.ogg.len(),
                "provider": spoken.provider,
            });
            if spoken.cut {
                answer["cut"] = json!(format!(
                    "the text was cut at [tts] max_chars ({})",
                    setup.max_chars
                ));
            }
            if !spoken.passed_over.is_empty() {
                answer["passedOver"] = json!(spoken.passed_over);
            }
            ToolOutput::ok(answer.to_string()).with_voice(name)
        })
    }
}
