//! Speech made by real espeak-ng and by OpenAI-compatible and ElevenLabs servers written from
//! their API documentation, encoded in-process, and decoded by a real decoder (ffprobe and
//! ffmpeg from Debian); voice notes heard through a transcription server.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;
use std::time::Duration;

use lurkbot_media::speech::{SpeechError, SttSetup, TtsProvider, TtsSetup, speak, transcribe};
use lurkbot_test_support::speech_servers::{SpeechApi, SpeechServer};

fn setup(order: &[TtsProvider]) -> TtsSetup {
    TtsSetup {
        order: order.to_vec(),
        openai_url: "http://127.0.0.1:9/v1".into(),
        openai_model: "gpt-4o-mini-tts".into(),
        openai_voice: "alloy".into(),
        elevenlabs_url: "http://127.0.0.1:9".into(),
        elevenlabs_model: "eleven_multilingual_v2".into(),
        elevenlabs_voice: "JBFqnCBsd6RMkjVDRZzb".into(),
        timeout: Duration::from_secs(30),
        ..TtsSetup::espeak_only(Some(PathBuf::from("espeak-ng")))
    }
}

/// What ffprobe says of the file: (codec, channels, duration in seconds).
fn probe(ogg: &[u8]) -> (String, u64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("speech.ogg");
    std::fs::write(&path, ogg).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,channels:format=duration",
        ])
        .args(["-of", "json"])
        .arg(&path)
        .output()
        .expect("ffprobe (apt-get install ffmpeg; scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stream = &json["streams"][0];
    let duration: f64 = json["format"]["duration"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // And the whole file decodes without an error.
    let decoded = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&path)
        .args(["-f", "s16le", "-ar", "48000", "-"])
        .output()
        .unwrap();
    assert!(
        decoded.status.success() && decoded.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&decoded.stderr)
    );
    let decoded_seconds = decoded.stdout.len() as f64 / 2.0 / 48_000.0;
    assert!(
        (decoded_seconds - duration).abs() < 0.05,
        "{decoded_seconds} vs {duration}"
    );
    (
        stream["codec_name"].as_str().unwrap().to_string(),
        stream["channels"].as_u64().unwrap(),
        duration,
    )
}

#[tokio::test]
async fn espeak_speaks_and_a_real_decoder_reads_the_opus_file() {
    let client = lurkbot_term::http_client_builder().build().unwrap();
    let spoken = speak(
        &client,
        &setup(&[TtsProvider::Espeak]),
        "Hello from LurkBot. The tests are green.",
        None,
    )
    .await
    .unwrap();
    assert_eq!(spoken.provider, "espeak");
    assert!(!spoken.cut);
    let (codec, channels, duration) = probe(&spoken.ogg);
    assert_eq!((codec.as_str(), channels), ("opus", 1));
    assert!(duration > 1.5 && duration < 6.0, "{duration}");
    assert!(
        (duration - spoken.seconds).abs() < 0.05,
        "{duration} vs {}",
        spoken.seconds
    );
}

#[tokio::test]
async fn a_voice_cannot_smuggle_an_option_into_espeak() {
    let client = lurkbot_term::http_client_builder().build().unwrap();
    let refused = speak(
        &client,
        &setup(&[TtsProvider::Espeak]),
        "hi",
        Some("--help"),
    )
    .await;
    match refused {
        Err(SpeechError::AllFailed(why)) => {
            assert!(why[0].contains("not an espeak-ng voice name"), "{why:?}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_openai_compatible_server_speaks_and_long_text_goes_in_pieces() {
    let server = SpeechServer::start(SpeechApi::OpenAi, Some("sk-test"));
    let mut setup = setup(&[TtsProvider::OpenAi]);
    setup.openai_url = server.base_url(SpeechApi::OpenAi);
    setup.openai_key = Some("sk-test".into());
    let sentence = "This sentence has exactly fifty characters in it. ";
    let text = sentence.repeat(30); // 1,500 characters: two requests.
    let client = lurkbot_term::http_client_builder().build().unwrap();
    let spoken = speak(&client, &setup, &text, Some("nova")).await.unwrap();
    assert_eq!(spoken.provider, "openai");
    let heard = server.heard();
    assert_eq!(
        heard.len(),
        2,
        "split at a sentence end under 1,000 characters"
    );
    let first: serde_json::Value = serde_json::from_slice(&heard[0].body).unwrap();
    assert_eq!(first["voice"], "nova");
    assert_eq!(first["response_format"], "wav");
    assert_eq!(first["input"].as_str().unwrap().len(), 999, "{first}");
    assert_eq!(heard[0].header("authorization"), Some("Bearer sk-test"));
    // The server's tone lasts 50 ms a character: 1,499 characters spoken (the spaces between
    // pieces are not).
    let (_, _, duration) = probe(&spoken.ogg);
    assert!((duration - 74.95).abs() < 0.1, "{duration}");
}

#[tokio::test]
async fn a_failing_provider_falls_back_to_the_next_and_says_so() {
    let openai = SpeechServer::start(SpeechApi::OpenAi, Some("sk-right"));
    let eleven = SpeechServer::start(SpeechApi::ElevenLabs, Some("xi-key"));
    let mut setup = setup(&[
        TtsProvider::OpenAi,
        TtsProvider::ElevenLabs,
        TtsProvider::Espeak,
    ]);
    setup.openai_url = openai.base_url(SpeechApi::OpenAi);
    setup.openai_key = Some("sk-wrong".into());
    setup.elevenlabs_url = eleven.base_url(SpeechApi::ElevenLabs);
    setup.elevenlabs_key = Some("xi-key".into());
    let client = lurkbot_term::http_client_builder().build().unwrap();
    let spoken = speak(&client, &setup, "Twenty characters!!!", None)
        .await
        .unwrap();
    assert_eq!(spoken.provider, "elevenlabs");
    assert_eq!(spoken.passed_over.len(), 1);
    assert!(
        spoken.passed_over[0].contains("openai: HTTP 401"),
        "{:?}",
        spoken.passed_over
    );
    let asked = &eleven.heard()[0];
    assert_eq!(
        asked.path,
        "/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb?output_format=pcm_16000"
    );
    assert_eq!(asked.header("xi-api-key"), Some("xi-key"));
    let (_, _, duration) = probe(&spoken.ogg);
    assert!((duration - 1.0).abs() < 0.05, "{duration}");
    // ElevenLabs down too: espeak answers.
    eleven.fail_next(1, 503);
    let spoken = speak(&client, &setup, "Still here.", None).await.unwrap();
    assert_eq!(spoken.provider, "espeak");
    assert_eq!(spoken.passed_over.len(), 2, "{:?}", spoken.passed_over);
}

#[tokio::test]
async fn text_past_the_cap_is_cut_at_a_sentence_and_flagged() {
    let server = SpeechServer::start(SpeechApi::OpenAi, None);
    let mut setup = setup(&[TtsProvider::OpenAi]);
    setup.openai_url = server.base_url(SpeechApi::OpenAi);
    setup.max_chars = 30;
    let client = lurkbot_term::http_client_builder().build().unwrap();
    let spoken = speak(
        &client,
        &setup,
        "First sentence here. Second sentence is long.",
        None,
    )
    .await
    .unwrap();
    assert!(spoken.cut);
    let asked: serde_json::Value = serde_json::from_slice(&server.heard()[0].body).unwrap();
    assert_eq!(asked["input"], "First sentence here.");
    let blank = speak(&client, &setup, "   ", None).await;
    assert!(matches!(blank, Err(SpeechError::NoText)), "{blank:?}");
    let none = speak(
        &client,
        &TtsSetup {
            order: Vec::new(),
            ..setup
        },
        "hi",
        None,
    )
    .await;
    assert!(
        matches!(&none, Err(SpeechError::NotSetUp(m)) if m.contains("apt-get install espeak-ng")),
        "{none:?}"
    );
}

#[tokio::test]
async fn a_voice_note_is_uploaded_as_multipart_and_its_text_comes_back() {
    let server = SpeechServer::start(SpeechApi::OpenAi, Some("sk-stt"));
    server.set_transcript("  what is on my calendar today  ");
    let stt = SttSetup {
        base_url: server.base_url(SpeechApi::OpenAi),
        key: Some("sk-stt".into()),
        model: "whisper-1".into(),
        max_bytes: 1_000_000,
    };
    let client = lurkbot_term::http_client_builder().build().unwrap();
    let note = speak(
        &client,
        &setup(&[TtsProvider::Espeak]),
        "what is on my calendar",
        None,
    )
    .await
    .unwrap()
    .ogg;
    let text = transcribe(&client, &stt, note.clone(), "voice.ogg", "audio/ogg")
        .await
        .unwrap();
    assert_eq!(text, "what is on my calendar today");
    let heard = &server.heard()[0];
    assert_eq!(heard.path, "/v1/audio/transcriptions");
    assert!(
        heard.body.windows(note.len()).any(|w| w == note.as_slice()),
        "the note's bytes, unchanged"
    );
    // The server refuses what the API refuses, and LurkBot says what it said.
    let refused = transcribe(&client, &stt, note.clone(), "voice.exe", "audio/ogg").await;
    assert!(
        matches!(&refused, Err(SpeechError::Provider(m)) if m.contains("HTTP 400") && m.contains("Invalid file format")),
        "{refused:?}"
    );
    let too_big = transcribe(
        &client,
        &SttSetup {
            max_bytes: 10,
            ..stt
        },
        note,
        "voice.ogg",
        "audio/ogg",
    )
    .await;
    assert!(
        matches!(&too_big, Err(SpeechError::Audio(m)) if m.contains("max_bytes")),
        "{too_big:?}"
    );
    assert_eq!(
        server.heard().len(),
        2,
        "a note over the limit is never sent"
    );
}

#[tokio::test]
async fn an_elevenlabs_voice_cannot_change_the_request_path() {
    let eleven = SpeechServer::start(SpeechApi::ElevenLabs, Some("xi-key"));
    let mut setup = setup(&[TtsProvider::ElevenLabs]);
    setup.elevenlabs_url = eleven.base_url(SpeechApi::ElevenLabs);
    setup.elevenlabs_key = Some("xi-key".into());
    let client = lurkbot_term::http_client_builder().build().unwrap();
    let refused = speak(&client, &setup, "hi", Some("../../v1/user")).await;
    match refused {
        Err(SpeechError::AllFailed(why)) => {
            assert!(why[0].contains("not an ElevenLabs voice id"), "{why:?}")
        }
        other => panic!("{other:?}"),
    }
    assert!(eleven.heard().is_empty(), "nothing was sent");
}
