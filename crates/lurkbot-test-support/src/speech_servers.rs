//! Speech APIs on loopback, written from their documentation, for the `tts` and voice-note
//! tests (the hosted ones have no local server): OpenAI's `POST /v1/audio/speech` (JSON `model`,
//! `input` ≤ 4,096 characters, `voice`, `response_format`) and `POST /v1/audio/transcriptions`
//! (a multipart upload with `file` and `model`; the file's extension must be one the API reads),
//! and ElevenLabs' `POST /v1/text-to-speech/{voice_id}?output_format=pcm_16000` with
//! `xi-api-key`. Each refuses what the real one refuses — a wrong key (OpenAI 401
//! `invalid_api_key`, ElevenLabs 401), a missing field or an input past the limit (400) — and
//! answers known audio: a 440 Hz tone lasting 50 ms per character of the input, so a test can
//! check the length of what LurkBot made from it.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use crate::http_request::HttpRequest;

/// Which API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeechApi {
    /// OpenAI's audio endpoints.
    OpenAi,
    /// ElevenLabs' text to speech.
    ElevenLabs,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Heard {
    /// The request target.
    pub path: String,
    /// Every header.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Heard {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    heard: Vec<Heard>,
    failures: Vec<u16>,
    transcript: String,
}

/// The server; runs until the test ends.
pub struct SpeechServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl SpeechServer {
    /// Serves `api`, accepting `key` (`None`: a local server that needs none).
    pub fn start(api: SpeechApi, key: Option<&str>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            transcript: "hello from a voice note".into(),
            ..State::default()
        }));
        let shared = state.clone();
        let key = key.map(str::to_string);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (shared, key) = (shared.clone(), key.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, api, key.as_deref(), &shared);
                });
            }
        });
        Self { addr, state }
    }

    /// `http://127.0.0.1:port/v1` for OpenAI (as `base_url` takes it), without `/v1` for
    /// ElevenLabs (LurkBot appends it).
    pub fn base_url(&self, api: SpeechApi) -> String {
        match api {
            SpeechApi::OpenAi => format!("http://{}/v1", self.addr),
            SpeechApi::ElevenLabs => format!("http://{}", self.addr),
        }
    }

    /// The next `times` requests fail with `status`.
    pub fn fail_next(&self, times: usize, status: u16) {
        let mut state = self.state.lock().unwrap();
        state.failures.extend(std::iter::repeat_n(status, times));
    }

    /// What transcriptions answer.
    pub fn set_transcript(&self, text: &str) {
        self.state.lock().unwrap().transcript = text.into();
    }

    /// Every request so far.
    pub fn heard(&self) -> Vec<Heard> {
        self.state.lock().unwrap().heard.clone()
    }
}

/// A 440 Hz tone of `millis` at `rate`, as 16-bit little-endian samples.
pub fn tone(rate: u32, millis: u64) -> Vec<u8> {
    let count = u64::from(rate) * millis / 1000;
    (0..count)
        .flat_map(|i| {
            let t = i as f64 / f64::from(rate);
            (((t * 440.0 * 2.0 * std::f64::consts::PI).sin() * 8_000.0) as i16).to_le_bytes()
        })
        .collect()
}

/// `pcm` (16-bit mono) as a WAV file.
pub fn wav(rate: u32, pcm: &[u8]) -> Vec<u8> {
    let mut out = b"RIFF".to_vec();
    out.extend((36 + pcm.len() as u32).to_le_bytes());
    out.extend(b"WAVEfmt ");
    out.extend(16u32.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend(rate.to_le_bytes());
    out.extend((rate * 2).to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(16u16.to_le_bytes());
    out.extend(b"data");
    out.extend((pcm.len() as u32).to_le_bytes());
    out.extend(pcm);
    out
}

fn serve(
    mut stream: TcpStream,
    api: SpeechApi,
    key: Option<&str>,
    state: &Mutex<State>,
) -> std::io::Result<()> {
    let request = HttpRequest::read(&stream)?;
    let (failure, transcript) = {
        let mut s = state.lock().unwrap();
        s.heard.push(Heard {
            path: request.path.clone(),
            headers: request.headers.clone(),
            body: request.body.clone(),
        });
        let failure = (!s.failures.is_empty()).then(|| s.failures.remove(0));
        (failure, s.transcript.clone())
    };
    if let Some(status) = failure {
        return crate::http_request::reply(
            &mut stream,
            status,
            "application/json",
            b"{\"error\":\"scripted\"}",
        );
    }
    let (status, kind, body) = match api {
        SpeechApi::OpenAi => openai(&request, key, &transcript),
        SpeechApi::ElevenLabs => elevenlabs(&request, key),
    };
    crate::http_request::reply(&mut stream, status, kind, &body)
}

type Answer = (u16, &'static str, Vec<u8>);

fn error(status: u16, message: &str) -> Answer {
    let body = serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}});
    (status, "application/json", body.to_string().into_bytes())
}

fn openai(request: &HttpRequest, key: Option<&str>, transcript: &str) -> Answer {
    if let Some(key) = key
        && request.header("authorization") != Some(&format!("Bearer {key}"))
    {
        return error(401, "Incorrect API key provided");
    }
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/v1/audio/speech") => {
            let Ok(json) = serde_json::from_slice::<serde_json::Value>(&request.body) else {
                return error(400, "We could not parse the JSON body of your request.");
            };
            let (Some(_model), Some(input), Some(_voice)) = (
                json["model"].as_str(),
                json["input"].as_str(),
                json["voice"].as_str(),
            ) else {
                return error(400, "model, input and voice are required");
            };
            let chars = input.chars().count();
            if chars == 0 || chars > 4096 {
                return error(400, "input must be 1 to 4096 characters");
            }
            let millis = 50 * chars as u64;
            match json["response_format"].as_str().unwrap_or("mp3") {
                "wav" => (200, "audio/wav", wav(24_000, &tone(24_000, millis))),
                "pcm" => (200, "audio/pcm", tone(24_000, millis)),
                "mp3" | "opus" | "aac" | "flac" => {
                    error(501, "this test server makes only wav and pcm")
                }
                other => error(400, &format!("Invalid value: '{other}'")),
            }
        }
        ("POST", "/v1/audio/transcriptions") => {
            let parts = request.multipart();
            let field = |name: &str| parts.iter().find(|p| p.name == name);
            let Some((Some(file_name), audio)) = field("file").map(|p| (&p.file_name, &p.bytes))
            else {
                return error(400, "you must provide a file");
            };
            if field("model").is_none() {
                return error(400, "you must provide a model parameter");
            }
            let known = [
                "flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "oga", "wav", "webm",
            ];
            let extension = file_name.rsplit('.').next().unwrap_or("");
            if !known.contains(&extension) || audio.is_empty() {
                return error(
                    400,
                    &format!("Invalid file format. Supported formats: {known:?}"),
                );
            }
            let body = serde_json::json!({"text": transcript});
            (200, "application/json", body.to_string().into_bytes())
        }
        _ => error(404, "Invalid URL"),
    }
}

fn elevenlabs(request: &HttpRequest, key: Option<&str>) -> Answer {
    if let Some(key) = key
        && request.header("xi-api-key") != Some(key)
    {
        let body = b"{\"detail\":{\"status\":\"invalid_api_key\",\"message\":\"Invalid API key\"}}";
        return (401, "application/json", body.to_vec());
    }
    let Some(rest) = request.path.strip_prefix("/v1/text-to-speech/") else {
        return (
            404,
            "application/json",
            b"{\"detail\":\"Not Found\"}".to_vec(),
        );
    };
    let (voice, query) = rest.split_once('?').unwrap_or((rest, ""));
    if voice.is_empty() {
        return (
            404,
            "application/json",
            b"{\"detail\":\"Not Found\"}".to_vec(),
        );
    }
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(&request.body) else {
        return (
            422,
            "application/json",
            b"{\"detail\":\"invalid body\"}".to_vec(),
        );
    };
    let Some(text) = json["text"].as_str().filter(|t| !t.is_empty()) else {
        return (
            422,
            "application/json",
            b"{\"detail\":\"text is required\"}".to_vec(),
        );
    };
    let millis = 50 * text.chars().count() as u64;
    match query
        .split('&')
        .find_map(|p| p.strip_prefix("output_format="))
    {
        Some("pcm_16000") => (200, "audio/pcm", tone(16_000, millis)),
        Some("pcm_24000") => (200, "audio/pcm", tone(24_000, millis)),
        _ => (
            501,
            "application/json",
            b"{\"detail\":\"this test server makes only pcm_16000 and pcm_24000\"}".to_vec(),
        ),
    }
}
