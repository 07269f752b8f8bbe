//! Text to speech: espeak-ng on this machine, an OpenAI-compatible `/audio/speech`, or
//! ElevenLabs, tried in order until one answers; what they return is encoded as OGG/Opus here.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Pcm, SpeechError, encode_ogg_opus, text};

/// Most bytes of audio one request may return (an hour of 24 kHz PCM is 173 MB; a piece of
/// 1,000 characters is about a minute).
const MAX_AUDIO_BYTES: u64 = 32 * 1024 * 1024;

/// A speech provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtsProvider {
    /// The local espeak-ng.
    Espeak,
    /// An OpenAI-compatible `/audio/speech`.
    OpenAi,
    /// ElevenLabs.
    ElevenLabs,
}

impl TtsProvider {
    /// Its name in config.
    pub fn name(self) -> &'static str {
        match self {
            Self::Espeak => "espeak",
            Self::OpenAi => "openai",
            Self::ElevenLabs => "elevenlabs",
        }
    }

    /// The provider of that name.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Espeak, Self::OpenAi, Self::ElevenLabs]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// Everything the providers need, resolved by the caller from `[tts]` and `.env`.
#[derive(Debug, Clone)]
pub struct TtsSetup {
    /// Providers in the order they are tried.
    pub order: Vec<TtsProvider>,
    /// espeak-ng, found on PATH (`None`: not installed).
    pub espeak: Option<PathBuf>,
    /// espeak-ng's voice.
    pub espeak_voice: String,
    /// OpenAI-compatible base URL with `/v1`.
    pub openai_url: String,
    /// Its key, if any.
    pub openai_key: Option<String>,
    /// Its model and voice.
    pub openai_model: String,
    /// Its voice.
    pub openai_voice: String,
    /// ElevenLabs' base URL.
    pub elevenlabs_url: String,
    /// `ELEVENLABS_API_KEY`.
    pub elevenlabs_key: Option<String>,
    /// ElevenLabs' model.
    pub elevenlabs_model: String,
    /// ElevenLabs' voice id.
    pub elevenlabs_voice: String,
    /// Longest text spoken.
    pub max_chars: usize,
    /// How long one provider may take.
    pub timeout: Duration,
}

impl TtsSetup {
    /// espeak-ng alone (`program`, with voice `en`), and nothing else set up: the local
    /// speech the tests and benchmarks make.
    pub fn espeak_only(program: Option<PathBuf>) -> Self {
        Self {
            order: vec![TtsProvider::Espeak],
            espeak: program,
            espeak_voice: "en".into(),
            openai_url: String::new(),
            openai_key: None,
            openai_model: String::new(),
            openai_voice: String::new(),
            elevenlabs_url: String::new(),
            elevenlabs_key: None,
            elevenlabs_model: String::new(),
            elevenlabs_voice: String::new(),
            max_chars: 4_000,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Speech made.
#[derive(Debug, Clone)]
pub struct Spoken {
    /// The OGG/Opus file.
    pub ogg: Vec<u8>,
    /// Its length in seconds.
    pub seconds: f64,
    /// The provider that answered.
    pub provider: &'static str,
    /// Providers that failed first, with why.
    pub passed_over: Vec<String>,
    /// Whether the text was cut at `max_chars`.
    pub cut: bool,
}

/// Speaks `text` (with `voice` for the first provider when given).
///
/// # Errors
/// [`SpeechError::NoText`] for blank text, [`SpeechError::AllFailed`] naming what each provider
/// said, [`SpeechError::NotSetUp`] when no provider is.
pub async fn speak(
    client: &reqwest::Client,
    setup: &TtsSetup,
    text: &str,
    voice: Option<&str>,
) -> Result<Spoken, SpeechError> {
    let (text, cut) = text::capped(text, setup.max_chars.max(1));
    if text.is_empty() {
        return Err(SpeechError::NoText);
    }
    if setup.order.is_empty() {
        return Err(SpeechError::NotSetUp(
            "no speech provider is set up: install espeak-ng (apt-get install espeak-ng), or set \
             [tts] base_url / OPENAI_API_KEY, or ELEVENLABS_API_KEY in the home's .env"
                .into(),
        ));
    }
    let mut passed_over = Vec::new();
    for (index, provider) in setup.order.iter().copied().enumerate() {
        let voice = if index == 0 { voice } else { None };
        let attempt = tokio::time::timeout(setup.timeout, async {
            let mut speech: Option<Pcm> = None;
            for piece in text::pieces(text, text::PIECE_CHARS) {
                let pcm = one_piece(client, setup, provider, piece, voice).await?;
                match &mut speech {
                    Some(all) => all.samples.extend(pcm.resampled(all.rate).samples),
                    None => speech = Some(pcm),
                }
            }
            speech.ok_or(SpeechError::NoText)
        })
        .await
        .unwrap_or_else(|_| {
            Err(SpeechError::Provider(format!(
                "no answer within {} s",
                setup.timeout.as_secs()
            )))
        });
        match attempt.and_then(|pcm| Ok((encode_ogg_opus(&pcm)?, pcm.seconds()))) {
            Ok((ogg, seconds)) => {
                return Ok(Spoken {
                    ogg,
                    seconds,
                    provider: provider.name(),
                    passed_over,
                    cut,
                });
            }
            Err(e) => passed_over.push(format!("{}: {e}", provider.name())),
        }
    }
    Err(SpeechError::AllFailed(passed_over))
}

async fn one_piece(
    client: &reqwest::Client,
    setup: &TtsSetup,
    provider: TtsProvider,
    text: &str,
    voice: Option<&str>,
) -> Result<Pcm, SpeechError> {
    match provider {
        TtsProvider::Espeak => {
            let program = setup.espeak.as_ref().ok_or_else(|| {
                SpeechError::NotSetUp(
                    "espeak-ng is not installed (apt-get install espeak-ng)".into(),
                )
            })?;
            espeak(program, voice.unwrap_or(&setup.espeak_voice), text).await
        }
        TtsProvider::OpenAi => {
            let url = format!("{}/audio/speech", setup.openai_url.trim_end_matches('/'));
            let body = serde_json::json!({
                "model": setup.openai_model,
                "input": text,
                "voice": voice.unwrap_or(&setup.openai_voice),
                "response_format": "wav",
            });
            let mut request = client
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
            if let Some(key) = &setup.openai_key {
                request = request.bearer_auth(key);
            }
            let audio = answer(request).await?;
            Pcm::from_wav(&audio)
        }
        TtsProvider::ElevenLabs => {
            let key = setup.elevenlabs_key.as_deref().ok_or_else(|| {
                SpeechError::NotSetUp("ELEVENLABS_API_KEY is not set in the home's .env".into())
            })?;
            let voice = voice.unwrap_or(&setup.elevenlabs_voice);
            if voice.is_empty() || !voice.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(SpeechError::Provider(format!(
                    "'{voice}' is not an ElevenLabs voice id (letters and digits)"
                )));
            }
            let url = format!(
                "{}/v1/text-to-speech/{voice}?output_format=pcm_16000",
                setup.elevenlabs_url.trim_end_matches('/')
            );
            let body = serde_json::json!({"text": text, "model_id": setup.elevenlabs_model});
            let audio = answer(
                client
                    .post(&url)
                    .header("xi-api-key", key)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.to_string()),
            )
            .await?;
            Ok(Pcm::from_le_bytes(&audio, 16_000))
        }
    }
}

/// The body of a successful answer (bounded), or what the failure was.
async fn answer(request: reqwest::RequestBuilder) -> Result<Vec<u8>, SpeechError> {
    let mut response = request.send().await.map_err(|e| {
        SpeechError::Provider(format!("cannot reach it: {}", lurkbot_term::root_cause(&e)))
    })?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        SpeechError::Provider(format!(
            "the answer broke off: {}",
            lurkbot_term::root_cause(&e)
        ))
    })? {
        body.extend_from_slice(&chunk);
        if body.len() as u64 > MAX_AUDIO_BYTES {
            return Err(SpeechError::Provider(format!(
                "the answer is larger than {MAX_AUDIO_BYTES} bytes"
            )));
        }
    }
    if !status.is_success() {
        let said: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        return Err(SpeechError::Provider(format!(
            "HTTP {status}: {}",
            said.trim()
        )));
    }
    Ok(body)
}

/// espeak-ng speaking `text` (given on stdin, never in argv) as a WAV on stdout.
async fn espeak(program: &PathBuf, voice: &str, text: &str) -> Result<Pcm, SpeechError> {
    if voice.is_empty()
        || voice.starts_with('-')
        || !voice
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '/'))
    {
        return Err(SpeechError::Provider(format!(
            "'{voice}' is not an espeak-ng voice name (`espeak-ng --voices` lists them)"
        )));
    }
    let mut child = tokio::process::Command::new(program)
        .args(["-b", "1", "-v", voice, "--stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| SpeechError::Provider(format!("cannot start {}: {e}", program.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = text.as_bytes().to_vec();
        // A write error shows as the exit status below.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let mut wav = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        stdout
            .take(MAX_AUDIO_BYTES)
            .read_to_end(&mut wav)
            .await
            .map_err(|e| SpeechError::Provider(format!("cannot read espeak-ng: {e}")))?;
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| SpeechError::Provider(format!("espeak-ng did not finish: {e}")))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        return Err(SpeechError::Provider(format!(
            "espeak-ng failed ({}): {}",
            output.status,
            said.trim().chars().take(200).collect::<String>()
        )));
    }
    Pcm::from_wav(&wav)
}
