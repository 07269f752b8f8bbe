//! Voice notes on the channels (ARCHITECTURE.md §5.2). **In:** a voice note (the platform marks
//! it so) is fetched through the network policy and transcribed through `[stt]`; the turn gets
//! its text marked as a transcript — or, without `[stt]`, a line saying a voice note arrived
//! that cannot be heard. **Out:** the voice notes `tts` made in the turn are sent after the
//! answer as the platform's voice message; with `[tts] auto = "always"`, or `"inbound-voice"`
//! and a voice note in, the answer itself is spoken when the model made none.

use lurkbot_channels::{Channel, Inbound, VoiceNote};
use lurkbot_core::TtsAuto;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use crate::channels::context::ChannelContext;

/// Replaces each voice note of `message` by what it said (or why it cannot be heard); whether
/// it had one.
pub(crate) async fn hear(
    state: &ChannelContext,
    channel: &dyn Channel,
    message: &mut Inbound,
    max: u64,
) -> bool {
    let (voices, others): (Vec<_>, Vec<_>) = std::mem::take(&mut message.media)
        .into_iter()
        .partition(|m| m.voice);
    message.media = others;
    if voices.is_empty() {
        return false;
    }
    // The platform's "[attachment: voice …] (not opened)" lines give way to what was said.
    let kept: Vec<&str> = message
        .text
        .lines()
        .filter(|line| {
            !(line.starts_with("[attachment: ")
                && (line.starts_with("[attachment: voice ")
                    || line.starts_with("[attachment: m.audio ")
                    || voices.iter().any(|v| line.contains(&v.name))))
        })
        .collect();
    let mut text = kept.join("\n");
    let config = state.config();
    let setup = lurkbot_agent::speech::stt_setup(&state.home, &config);
    for voice in &voices {
        let heard = match &setup {
            None => "[a voice note arrived; it cannot be heard here: no transcription is set up \
                     ([stt] base_url in config.toml)]"
                .to_string(),
            Some(setup) => match transcribe(state, channel, voice, setup, max).await {
                Ok(said) if said.is_empty() => {
                    "[a voice note arrived; nothing was heard in it]".into()
                }
                Ok(said) => format!("[voice note, transcribed] {said}"),
                Err(why) => {
                    tracing::warn!(
                        channel = channel.name(),
                        error = why.as_str(),
                        "voice note not transcribed"
                    );
                    format!("[a voice note arrived; it could not be transcribed: {why}]")
                }
            },
        };
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&heard);
    }
    message.text = text;
    true
}

async fn transcribe(
    state: &ChannelContext,
    channel: &dyn Channel,
    voice: &lurkbot_channels::Media,
    setup: &lurkbot_media::speech::SttSetup,
    max: u64,
) -> Result<String, String> {
    let max = max.min(setup.max_bytes);
    let (_, _, bytes) =
        crate::channels::media::fetch_one(state, channel, voice, "voice-note", max).await?;
    let (name, mime) = audio_kind(&bytes);
    let client = lurkbot_agent::web::settings_client(std::time::Duration::from_secs(
        state.config().stt.timeout_seconds.max(1),
    ))?;
    lurkbot_media::speech::transcribe(&client, setup, bytes, name, mime)
        .await
        .map_err(|e| e.to_string())
}

/// A file name and media type for audio, from its first bytes (servers choose the decoder by
/// the name's extension).
fn audio_kind(bytes: &[u8]) -> (&'static str, &'static str) {
    match bytes {
        [b'R', b'I', b'F', b'F', ..] => ("voice.wav", "audio/wav"),
        [b'I', b'D', b'3', ..] | [0xFF, 0xF2..=0xFB, ..] => ("voice.mp3", "audio/mpeg"),
        [b'f', b'L', b'a', b'C', ..] => ("voice.flac", "audio/flac"),
        [0x1A, 0x45, 0xDF, 0xA3, ..] => ("voice.webm", "audio/webm"),
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => ("voice.m4a", "audio/mp4"),
        _ => ("voice.ogg", "audio/ogg"),
    }
}

/// Speaks the answer when `[tts] auto` says so and the model made no voice note (the notes it
/// made go through the outbox with the answer: `outbox.rs`); the spoken answer is kept under
/// `workspace/audio/` and sent through the outbox too. Failures are logged; the text answer
/// already went.
pub(crate) async fn speak(
    state: &ChannelContext,
    channel: &dyn Channel,
    chat: &str,
    reply_to: Option<&str>,
    made: &[String],
    answer: &str,
    voice_in: bool,
) -> usize {
    let mut notes: Vec<Vec<u8>> = Vec::new();
    let config = state.config();
    let auto = match config.tts.auto {
        TtsAuto::Off => false,
        TtsAuto::Always => true,
        TtsAuto::InboundVoice => voice_in,
    };
    if made.is_empty() && auto {
        let text = spoken_text(answer);
        if !text.trim().is_empty() {
            let setup = lurkbot_agent::speech::tts_setup(&state.home, &config);
            let spoken = match lurkbot_agent::web::settings_client(setup.timeout) {
                Ok(client) => lurkbot_media::speech::speak(&client, &setup, &text, None)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            match spoken {
                Ok(spoken) => notes.push(spoken.ogg),
                Err(e) => tracing::warn!(
                    channel = channel.name(),
                    error = e.as_str(),
                    "the answer was not spoken"
                ),
            }
        }
    }
    let mut sent = 0;
    for ogg in &notes {
        // Kept and recorded like a note the model made: sent through the outbox, retried with
        // the channel's policy and shown if refused, sent after a restart if not sent yet.
        if let Some(store) = state.host.store() {
            let recorded = match keep(state, ogg) {
                Ok(name) => {
                    let message = lurkbot_state::NewOutgoing {
                        channel: channel.name().to_string(),
                        chat: chat.to_string(),
                        reply_to: reply_to.map(str::to_string),
                        kind: "voice".into(),
                        body: name,
                    };
                    state
                        .host
                        .channels
                        .deliver_recorded((&state.home, store), message)
                        .await
                }
                Err(e) => Err(e),
            };
            match recorded {
                Ok(_) => sent += 1,
                Err(e) => {
                    tracing::warn!(
                        channel = channel.name(),
                        chat,
                        error = e.as_str(),
                        "the spoken answer was not sent"
                    );
                    // Shown in the channel's status, where the owner looks.
                    if let Some(live) = state.host.channels.live(channel.name()) {
                        live.note_error(&e);
                    }
                }
            }
            continue;
        }
        let seconds = lurkbot_media::speech::ogg_opus_seconds(ogg).unwrap_or(0.0);
        match channel
            .send_voice(chat, VoiceNote { ogg, seconds }, reply_to)
            .await
        {
            Ok(()) => sent += 1,
            Err(e) => {
                tracing::warn!(channel = channel.name(), chat, error = %e, "voice note not sent")
            }
        }
    }
    sent
}

/// Keeps a spoken answer under `workspace/audio/` (private); its file name.
fn keep(state: &ChannelContext, ogg: &[u8]) -> Result<String, String> {
    let name = format!(
        "spoken-{}-{}.ogg",
        lurkbot_core::now_ms(),
        lurkbot_core::random_hex(3)
    );
    let dir = lurkbot_agent::speech::AUDIO_DIR;
    lurkbot_core::create_private_dir(&state.home.join(dir)).map_err(|e| e.to_string())?;
    // Where it lands is what the path resolves to: the workspace is the model's, and a link it
    // planted at workspace/audio must not carry the write out of that folder.
    let path = state
        .home
        .resolve_under(dir, &format!("{dir}/{name}"))
        .ok_or_else(|| format!("{dir} does not resolve inside the home's {dir}: not written"))?;
    lurkbot_core::write_atomic_with_mode(&path, ogg, 0o600)
        .map_err(|e| format!("the spoken answer was not kept: {e}"))?;
    Ok(name)
}

/// What an answer says aloud: its Markdown's text, without code blocks, marks or link targets.
pub(crate) fn spoken_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut in_code_block = false;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Text(t) | Event::Code(t) if !in_code_block => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item) => out.push('\n'),
            _ => {}
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_spoken_without_its_marks_and_code() {
        let said = spoken_text(
            "# Plan\n**Buy** milk, see [the list](https://x.example).\n\n```\nrm -rf /\n```\n- one\n- `two`",
        );
        assert_eq!(said, "Plan\nBuy milk, see the list.\none\ntwo");
    }

    #[test]
    fn audio_is_named_by_its_content() {
        assert_eq!(audio_kind(b"OggS\0\x02"), ("voice.ogg", "audio/ogg"));
        assert_eq!(audio_kind(b"RIFF\0\0\0\0WAVE"), ("voice.wav", "audio/wav"));
        assert_eq!(
            audio_kind(b"\0\0\0\x20ftypM4A "),
            ("voice.m4a", "audio/mp4")
        );
        assert_eq!(audio_kind(b"ID3\x04"), ("voice.mp3", "audio/mpeg"));
    }
}
