//! Speech to text: a voice note sent to an OpenAI-compatible `/audio/transcriptions` (hosted
//! Whisper, or a local server speaking the same API) as a multipart upload.

use lurkbot_core::multipart::Form;

use super::SpeechError;

/// Where and how to transcribe, resolved by the caller from `[stt]` and `.env`.
#[derive(Debug, Clone)]
pub struct SttSetup {
    /// Base URL with `/v1`.
    pub base_url: String,
    /// The key, if any.
    pub key: Option<String>,
    /// The model.
    pub model: String,
    /// Largest upload.
    pub max_bytes: u64,
}

/// The text of the voice note `audio` (named `file_name`, of type `mime`).
///
/// # Errors
/// [`SpeechError::Audio`] for a note too large, [`SpeechError::Provider`] for what the server
/// said or could not say.
pub async fn transcribe(
    client: &reqwest::Client,
    setup: &SttSetup,
    audio: Vec<u8>,
    file_name: &str,
    mime: &str,
) -> Result<String, SpeechError> {
    if audio.len() as u64 > setup.max_bytes {
        return Err(SpeechError::Audio(format!(
            "the voice note is {} bytes, more than [stt] max_bytes ({})",
            audio.len(),
            setup.max_bytes
        )));
    }
    let (kind, body) = Form::new()
        .text("model", &setup.model)
        .text("response_format", "json")
        .file("file", file_name, mime, audio)
        .finish();
    let url = format!(
        "{}/audio/transcriptions",
        setup.base_url.trim_end_matches('/')
    );
    let mut request = client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, kind)
        .body(body);
    if let Some(key) = &setup.key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| {
        SpeechError::Provider(format!(
            "cannot reach {url}: {}",
            lurkbot_term::root_cause(&e)
        ))
    })?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| SpeechError::Provider(format!("the answer broke off: {e}")))?;
    if !status.is_success() {
        let said: String = text.chars().take(200).collect();
        return Err(SpeechError::Provider(format!(
            "HTTP {status}: {}",
            said.trim()
        )));
    }
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| SpeechError::Provider(format!("the answer is not JSON: {e}")))?;
    json["text"]
        .as_str()
        .map(|t| t.trim().to_string())
        .ok_or_else(|| SpeechError::Provider("the answer has no \"text\"".into()))
}
