//! `[tts]` and `[stt]`: how the agent speaks (the `tts` tool, voice replies on channels) and
//! hears voice notes (ARCHITECTURE.md §5.2). Provider URLs are the owner's settings (not
//! filtered by the network policy); keys live in `.env`, named by `api_key_env`.

use serde::{Deserialize, Serialize};

/// When a channel's answer is also spoken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum TtsAuto {
    /// Only when the model calls `tts`.
    #[default]
    Off,
    /// Every answer on a channel is also sent as a voice note.
    Always,
    /// An answer to a voice note is a voice note too.
    InboundVoice,
}

/// `[tts]` settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct TtsConfig {
    /// The provider asked first: `espeak`, `openai` or `elevenlabs`. Unset: espeak-ng when it is
    /// installed, else the first one set up. When it fails, every other provider that is set up
    /// is tried in the order openai, elevenlabs, espeak.
    pub provider: Option<String>,
    /// OpenAI-compatible base URL, written like `OPENAI_BASE_URL` (with `/v1`; LurkBot appends
    /// `/audio/speech`). Unset: `OPENAI_BASE_URL` from `.env`, else `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// The `.env` variable holding the key sent to `base_url` (default `OPENAI_API_KEY`). A
    /// local server that needs no key works without it once `base_url` is set.
    pub api_key_env: String,
    /// OpenAI speech model (default `gpt-4o-mini-tts`).
    pub model: String,
    /// OpenAI voice (default `alloy`).
    pub voice: String,
    /// ElevenLabs base URL (LurkBot appends `/v1/text-to-speech/<voice>`); its key is
    /// `ELEVENLABS_API_KEY` in `.env`.
    pub elevenlabs_url: String,
    /// ElevenLabs model (default `eleven_multilingual_v2`).
    pub elevenlabs_model: String,
    /// ElevenLabs voice id.
    pub elevenlabs_voice: String,
    /// The espeak-ng program (a name on PATH, or a path).
    pub espeak_executable: String,
    /// espeak-ng voice (default `en`; `espeak-ng --voices` lists them).
    pub espeak_voice: String,
    /// Longest text spoken at once (default 4,000 characters); longer text is cut at a
    /// sentence end and the result says so.
    pub max_chars: usize,
    /// Seconds one provider may take before the next is tried (default 60).
    pub timeout_seconds: u64,
    /// `off` (default), `always`, or `inbound-voice`: answer a voice note with a voice note.
    pub auto: TtsAuto,
}

impl Default for TtsConfig {
    fn default() -> Self {
        Self {
            provider: None,
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            model: "gpt-4o-mini-tts".into(),
            voice: "alloy".into(),
            elevenlabs_url: "https://api.elevenlabs.io".into(),
            elevenlabs_model: "eleven_multilingual_v2".into(),
            elevenlabs_voice: "JBFqnCBsd6RMkjVDRZzb".into(),
            espeak_executable: "espeak-ng".into(),
            espeak_voice: "en".into(),
            max_chars: 4_000,
            timeout_seconds: 60,
            auto: TtsAuto::Off,
        }
    }
}

/// `[stt]` settings: voice notes heard through an OpenAI-compatible
/// `/v1/audio/transcriptions` (hosted Whisper, or a local server speaking the same API).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct SttConfig {
    /// Base URL with `/v1` (LurkBot appends `/audio/transcriptions`). Unset: voice notes are
    /// not transcribed, and the turn is told one arrived that it cannot hear.
    pub base_url: Option<String>,
    /// The `.env` variable holding the key sent to `base_url` (default `OPENAI_API_KEY`;
    /// optional for a local server).
    pub api_key_env: String,
    /// Transcription model (default `whisper-1`).
    pub model: String,
    /// Largest voice note sent (default 25 MB, OpenAI's limit).
    pub max_bytes: u64,
    /// Seconds a transcription may take (default 60).
    pub timeout_seconds: u64,
}

impl Default for SttConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            model: "whisper-1".into(),
            max_bytes: 25_000_000,
            timeout_seconds: 60,
        }
    }
}
