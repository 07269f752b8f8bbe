//! Speech (ARCHITECTURE.md §5.2): text to an OGG/Opus voice note through espeak-ng, an
//! OpenAI-compatible server or ElevenLabs, and voice notes to text through an OpenAI-compatible
//! transcription server.

mod ogg_opus;
mod pcm;
mod stt;
mod text;
mod tts;

pub use ogg_opus::{encode_ogg_opus, ogg_opus_seconds};
pub use pcm::Pcm;
pub use stt::{SttSetup, transcribe};
pub use tts::{Spoken, TtsProvider, TtsSetup, speak};

/// Why speech could not be made or heard.
#[derive(Debug, thiserror::Error)]
pub enum SpeechError {
    /// Nothing to say.
    #[error("there is no text to speak")]
    NoText,
    /// The audio is not what it should be.
    #[error("{0}")]
    Audio(String),
    /// A provider is missing something it needs.
    #[error("{0}")]
    NotSetUp(String),
    /// A provider failed.
    #[error("{0}")]
    Provider(String),
    /// Every provider failed.
    #[error("no speech provider answered: {}", .0.join("; "))]
    AllFailed(Vec<String>),
}

impl SpeechError {
    /// A stable code for tool results.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoText => "NoText",
            Self::Audio(_) => "BadAudio",
            Self::NotSetUp(_) => "SpeechNotSetUp",
            Self::Provider(_) | Self::AllFailed(_) => "SpeechProviderFailed",
        }
    }
}
