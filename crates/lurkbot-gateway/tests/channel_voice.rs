//! Voice both ways on a channel (ARCHITECTURE.md §5.2), on the Telegram test server: a voice
//! note is fetched, transcribed by an OpenAI-compatible transcription server (written from the
//! API docs) and reaches the turn as a transcript; with `[tts] auto = "inbound-voice"` the answer
//! goes back as a voice note made by the real espeak-ng (a `sendVoice` multipart upload of
//! OGG/Opus that ffprobe decodes); a `tts` call is delivered as voice; without `[stt]` the turn
//! is told it cannot hear the note.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::Step;
use lurkbot_test_support::speech_servers::{SpeechApi, SpeechServer};
use lurkbot_test_support::telegram_server::{SentVoice, TelegramServer};
use serde_json::json;

use crate::common::Gateway;

const BOT_TOKEN: &str = "123456:test-bot-token";

async fn gateway(server: &TelegramServer, extra: &str, steps: Vec<Step>, env: &str) -> Gateway {
    let port = server.url().rsplit(':').next().unwrap().to_string();
    let config = format!(
        "{extra}[channels.telegram]\nbase_url = \"{}\"\nallow_from = [\"42\"]\n[network]\nallow_hosts = [\"127.0.0.1:{port}\"]\n",
        server.url()
    );
    Gateway::start_with_env(
        &config,
        steps,
        &format!("TELEGRAM_BOT_TOKEN={BOT_TOKEN}\n{env}"),
    )
    .await
}

async fn wait_voices(server: &Arc<TelegramServer>, n: usize) -> Vec<SentVoice> {
    let server = server.clone();
    tokio::task::spawn_blocking(move || server.wait_voices(n, Duration::from_secs(30)))
        .await
        .unwrap()
}

async fn wait_texts(server: &Arc<TelegramServer>, n: usize) {
    let server = server.clone();
    let sent = tokio::task::spawn_blocking(move || server.wait_sent(n, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(sent.len(), n, "{sent:?}");
}

/// ffprobe's codec and duration of `ogg`.
fn probe(ogg: &[u8]) -> (String, f64) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), ogg).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name:format=duration",
            "-of",
            "json",
        ])
        .arg(file.path())
        .output()
        .expect("ffprobe (scripts/test.sh installs ffmpeg)");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        json["streams"][0]["codec_name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        json["format"]["duration"]
            .as_str()
            .unwrap_or("0")
            .parse()
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_is_transcribed_and_answered_with_a_voice_note() {
    let stt = SpeechServer::start(SpeechApi::OpenAi, Some("sk-stt"));
    stt.set_transcript("what is on my calendar today");
    let server = Arc::new(TelegramServer::start(BOT_TOKEN));
    let extra = format!(
        "[stt]\nbase_url = \"{}\"\napi_key_env = \"STT_KEY\"\n[tts]\nprovider = \"espeak\"\nauto = \"inbound-voice\"\n",
        stt.base_url(SpeechApi::OpenAi)
    );
    let steps = vec![Step::text("You have **two** meetings today.")];
    let gw = gateway(&server, &extra, steps, "STT_KEY=sk-stt\n").await;
    let note = crate::common::recorded_note("what is on my calendar").await;
    server.user_sends_voice(42, 42, "owner", &note, 2);
    wait_texts(&server, 1).await;
    let voices = wait_voices(&server, 1).await;
    // What the model read: the transcript, marked as one, instead of an unopened attachment.
    let asked = gw.fake.requests()[0].body.to_string();
    assert!(
        asked.contains("[voice note, transcribed] what is on my calendar today"),
        "{asked}"
    );
    assert!(!asked.contains("not opened"), "{asked}");
    // The transcription server got the note itself, as a multipart upload with the key.
    let heard = stt.heard();
    assert_eq!(heard.len(), 1);
    assert_eq!(heard[0].header("authorization"), Some("Bearer sk-stt"));
    assert!(
        heard[0]
            .body
            .windows(note.len())
            .any(|w| w == note.as_slice())
    );
    // The answer went back as text and as a voice note: OGG/Opus, replying to the note.
    assert_eq!(voices.len(), 1);
    let voice = &voices[0];
    assert_eq!(voice.content_type.as_deref(), Some("audio/ogg"));
    let (codec, seconds) = probe(&voice.bytes);
    assert_eq!(codec, "opus");
    assert!(seconds > 1.0, "{seconds}");
    assert_eq!(voice.duration, Some(seconds.ceil() as u64));
    assert!(voice.reply_to.is_some());
    assert_eq!(gw.fake.requests().len(), 1);
    // The spoken answer went through the outbox, kept in the workspace like a tts note.
    let store = lurkbot_state::Store::open(&gw.home).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let spoken = loop {
        let sent = store
            .outbox(&[lurkbot_state::OutgoingState::Sent], 10)
            .unwrap()
            .into_iter()
            .find(|m| m.kind == "voice");
        if let Some(m) = sent {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "no voice entry sent");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(spoken.body.starts_with("spoken-"), "{spoken:?}");
    let kept = std::fs::read(gw.home.join("workspace/audio").join(&spoken.body)).unwrap();
    assert_eq!(kept, voice.bytes, "the file sent is the one kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_stt_the_turn_is_told_it_cannot_hear_and_no_voice_goes_back() {
    let server = Arc::new(TelegramServer::start(BOT_TOKEN));
    let gw = gateway(&server, "", vec![Step::text("Please write it down.")], "").await;
    server.user_sends_voice(42, 42, "owner", b"OggS not really", 1);
    wait_texts(&server, 1).await;
    let asked = gw.fake.requests()[0].body.to_string();
    assert!(asked.contains("it cannot be heard here"), "{asked}");
    assert!(asked.contains("[stt] base_url"), "{asked}");
    assert!(server.voices().is_empty(), "auto is off by default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tts_call_is_kept_in_the_workspace_and_sent_as_voice() {
    let server = Arc::new(TelegramServer::start(BOT_TOKEN));
    let steps = vec![
        Step::call(
            "c1",
            "tts",
            json!({"text": "Good morning. Here is your summary."}),
        ),
        Step::text("Sent you a voice note."),
    ];
    let gw = gateway(&server, "[tts]\nprovider = \"espeak\"\n", steps, "").await;
    server.user_writes(42, 42, "owner", "private", "read me the summary");
    wait_texts(&server, 1).await;
    let voices = wait_voices(&server, 1).await;
    let (codec, seconds) = probe(&voices[0].bytes);
    assert_eq!(codec, "opus");
    assert!(seconds > 1.5, "{seconds}");
    // The tool's result names the file, and the file is what was sent.
    let result = gw.fake.requests()[1].body.to_string();
    assert!(result.contains("workspace/audio/tts-"), "{result}");
    assert!(
        result.contains("\\\"provider\\\":\\\"espeak\\\""),
        "{result}"
    );
    let dir = gw.home.join("workspace/audio");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    assert_eq!(std::fs::read(files[0].path()).unwrap(), voices[0].bytes);
    // auto is off: the text answer is not spoken a second time.
    assert_eq!(server.voices().len(), 1);
    // The voice note went through the outbox after the answer, as its own entry.
    let store = lurkbot_state::Store::open(&gw.home).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let sent = loop {
        let sent = store
            .outbox(&[lurkbot_state::OutgoingState::Sent], 10)
            .unwrap();
        if sent.len() == 2 || std::time::Instant::now() > deadline {
            break sent;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let kinds: Vec<&str> = sent.iter().map(|m| m.kind.as_str()).collect();
    assert_eq!(kinds, ["text", "voice"], "{sent:?}");
    assert_eq!(
        gw.home.join("workspace/audio").join(&sent[1].body),
        files[0].path()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcription_failure_is_said_to_the_turn() {
    let stt = SpeechServer::start(SpeechApi::OpenAi, None);
    stt.fail_next(1, 503);
    let server = Arc::new(TelegramServer::start(BOT_TOKEN));
    let extra = format!(
        "[stt]\nbase_url = \"{}\"\n",
        stt.base_url(SpeechApi::OpenAi)
    );
    let gw = gateway(&server, &extra, vec![Step::text("Could you type it?")], "").await;
    let note = crate::common::recorded_note("hello").await;
    server.user_sends_voice(42, 42, "owner", &note, 1);
    wait_texts(&server, 1).await;
    let asked = gw.fake.requests()[0].body.to_string();
    assert!(asked.contains("it could not be transcribed"), "{asked}");
    assert!(asked.contains("HTTP 503"), "{asked}");
    assert_eq!(stt.heard().len(), 1);
}

/// The spoken answer is written where `workspace/audio` resolves to, only inside it: a link the
/// model planted there pointing out of the home carries nothing out; the channel's status says
/// why no voice went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoken_answer_is_not_written_through_a_planted_link() {
    let server = Arc::new(TelegramServer::start(BOT_TOKEN));
    let extra = "[tts]\nprovider = \"espeak\"\nauto = \"always\"\n";
    let gw = gateway(&server, extra, vec![Step::text("Spoken, or not.")], "").await;
    let outside = tempfile::tempdir().unwrap();
    let audio = gw.home.join("workspace/audio");
    let _ = std::fs::remove_dir_all(&audio);
    std::os::unix::fs::symlink(outside.path(), &audio).unwrap();
    let (mut c, _) = crate::common::Client::connect(&gw, crate::common::TOKEN).await;
    server.user_writes(42, 42, "owner", "private", "say it");
    wait_texts(&server, 1).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status =
            c.request("channels.status", json!({})).await["payload"]["channels"][0].clone();
        if status["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("does not resolve"))
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing outside"
    );
    assert!(server.voices().is_empty());
}
