//! A voice note `tts` made plays in the web UI's chat (real headless Chromium): the player's
//! audio is fetched with the token from `/v1/audio/<name>`, and Chromium decodes the OGG/Opus
//! file (its duration is known) — live and after a reload. The route serves nothing but voice
//! notes, and nothing without the token.

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::browser::{Ui, until};
use crate::common::Gateway;

/// The duration Chromium decoded from the chat's player, once it has one.
const PLAYER: &str = "((a) => a && a.src.startsWith('blob:') && a.readyState >= 1 && isFinite(a.duration) ? a.duration : null)(document.querySelector('#messages audio.voice'))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_plays_in_the_chat_and_the_route_serves_only_voice_notes() {
    let gw = Gateway::start(
        "[tts]\nprovider = \"espeak\"\n",
        vec![
            Step::call("c1", "tts", json!({"text": "The build is green."})),
            Step::text("Done."),
        ],
    )
    .await;
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    crate::browser::say(b, "say it").await;
    let seconds = until(b, "a playable voice note", PLAYER).await;
    assert!(seconds.as_f64().unwrap() > 0.8, "{seconds}");
    b.refresh().await.unwrap();
    let again = until(b, "the voice note after a reload", PLAYER).await;
    assert_eq!(again, seconds);
    b.clone().close().await.unwrap();

    let name = std::fs::read_dir(gw.home.join("workspace/audio"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    let http = reqwest::Client::new();
    let url = |path: &str| format!("http://{}/v1/audio/{path}", gw.addr);
    let status = |r: reqwest::Response| r.status().as_u16();
    let with_token = |path: &str| http.get(url(path)).bearer_auth(crate::common::TOKEN).send();
    let ok = with_token(&name).await.unwrap();
    assert_eq!(ok.headers()["content-type"], "audio/ogg");
    assert_eq!(&ok.bytes().await.unwrap()[..4], b"OggS");
    assert_eq!(status(http.get(url(&name)).send().await.unwrap()), 401);
    // A link planted in the audio folder that points at config.toml is not a voice note.
    std::os::unix::fs::symlink(
        gw.home.join("config.toml"),
        gw.home.join("workspace/audio/tts-x.ogg"),
    )
    .unwrap();
    for refused in ["tts-x.ogg", "..%2Fconfig.toml", "config.toml", "TTS.ogg"] {
        assert_eq!(status(with_token(refused).await.unwrap()), 404, "{refused}");
    }
}
