//! Speech settings resolved for `lurkbot-media` (ARCHITECTURE.md §5.2): `[tts]` and `[stt]`
//! with their keys from `.env`, the providers' order, and where voice notes are kept.
//! Provider URLs are the owner's settings, reached as written (like search providers, §4.6).

use std::path::PathBuf;
use std::time::Duration;

use lurkbot_core::{Config, Home};
use lurkbot_media::speech::{SttSetup, TtsProvider, TtsSetup};

/// Where `tts` writes its voice notes, inside the home.
pub const AUDIO_DIR: &str = "workspace/audio";

/// The default OpenAI base URL (as the `openai` model provider's).
const OPENAI_URL: &str = "https://api.openai.com/v1";

/// The text-to-speech setup: `[tts]`, keys from the environment or `.env`, espeak-ng looked up
/// on PATH, and the providers' order (the configured one first, then every other that is set
/// up: openai, elevenlabs, espeak).
pub fn tts_setup(home: &Home, config: &Config) -> TtsSetup {
    let settings = &config.tts;
    let vars = crate::setup::variables(home);
    let espeak = lurkbot_browser::find_executable(&settings.espeak_executable);
    let openai_key = vars(&settings.api_key_env).filter(|k| !k.is_empty());
    let openai_url = settings
        .base_url
        .clone()
        .or_else(|| vars("OPENAI_BASE_URL"))
        .unwrap_or_else(|| OPENAI_URL.to_string());
    let elevenlabs_key = vars("ELEVENLABS_API_KEY").filter(|k| !k.is_empty());
    let set_up = |p: TtsProvider| match p {
        TtsProvider::Espeak => espeak.is_some(),
        TtsProvider::OpenAi => openai_key.is_some() || settings.base_url.is_some(),
        TtsProvider::ElevenLabs => elevenlabs_key.is_some(),
    };
    let first = settings
        .provider
        .as_deref()
        .and_then(TtsProvider::parse)
        .or_else(|| {
            [
                TtsProvider::Espeak,
                TtsProvider::OpenAi,
                TtsProvider::ElevenLabs,
            ]
            .into_iter()
            .find(|p| set_up(*p))
        });
    let mut order: Vec<TtsProvider> = first.into_iter().collect();
    for p in [
        TtsProvider::OpenAi,
        TtsProvider::ElevenLabs,
        TtsProvider::Espeak,
    ] {
        if Some(p) != first && set_up(p) {
            order.push(p);
        }
    }
    TtsSetup {
        order,
        espeak,
        espeak_voice: settings.espeak_voice.clone(),
        openai_url,
        openai_key,
        openai_model: settings.model.clone(),
        openai_voice: settings.voice.clone(),
        elevenlabs_url: settings.elevenlabs_url.clone(),
        elevenlabs_key,
        elevenlabs_model: settings.elevenlabs_model.clone(),
        elevenlabs_voice: settings.elevenlabs_voice.clone(),
        max_chars: settings.max_chars,
        timeout: Duration::from_secs(settings.timeout_seconds.max(1)),
    }
}

/// Whether any speech provider is set up (the `tts` tool is offered only then).
pub fn can_speak(home: &Home, config: &Config) -> bool {
    !tts_setup(home, config).order.is_empty()
}

/// The speech-to-text setup, or `None` when `[stt] base_url` is unset.
pub fn stt_setup(home: &Home, config: &Config) -> Option<SttSetup> {
    let settings = &config.stt;
    let base_url = settings.base_url.clone()?;
    let vars = crate::setup::variables(home);
    Some(SttSetup {
        base_url,
        key: vars(&settings.api_key_env).filter(|k| !k.is_empty()),
        model: settings.model.clone(),
        max_bytes: settings.max_bytes,
    })
}

/// The file of a voice note: `name` (as `tts` names them) resolved inside the home as every
/// reader resolves it, and only when what it resolves to lies under [`AUDIO_DIR`].
pub fn voice_note_file(home: &Home, name: &str) -> Option<PathBuf> {
    let plain = name.strip_suffix(".ogg")?;
    if plain.is_empty()
        || !plain
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return None;
    }
    home.resolve_under(AUDIO_DIR, &format!("{AUDIO_DIR}/{name}"))
        .filter(|path| path.is_file())
}
