//! Photos sent on a channel reach the model as image parts of that turn (ARCHITECTURE.md §5.2):
//! a Pillow-made photo with EXIF GPS sent on the Telegram test server arrives downscaled and
//! without metadata in the OpenAI wire format; a model set without vision gets a note instead.

use std::time::Duration;

use base64::Engine as _;
use lurkbot_llm::fake::Step;
use lurkbot_test_support::telegram_server::TelegramServer;
use lurkbot_test_support::venv::test_python;
use serde_json::Value;

use crate::common::Gateway;

const BOT_TOKEN: &str = "123456:test-bot-token";

fn photo_with_gps() -> Vec<u8> {
    let file = tempfile::NamedTempFile::new().unwrap();
    let script = r#"
import sys
from PIL import Image
im = Image.new("RGB", (3000, 2000), (30, 90, 160))
exif = Image.Exif()
exif[0x8825] = {1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)}
im.save(sys.argv[1], "JPEG", exif=exif)
"#;
    lurkbot_test_support::venv::run_python(["-c", script, file.path().to_str().unwrap()]);
    std::fs::read(file.path()).unwrap()
}

async fn gateway(server: &TelegramServer, extra: &str) -> Gateway {
    let port = server.url().rsplit(':').next().unwrap().to_string();
    let config = format!(
        "{extra}[channels.telegram]\nbase_url = \"{}\"\nallow_from = [\"42\"]\nfetch_media = true\nmax_media_bytes = 5000000\n[network]\nallow_hosts = [\"127.0.0.1:{port}\"]\n",
        server.url()
    );
    Gateway::start_with_env(
        &config,
        vec![Step::text("A blue picture.")],
        &format!("TELEGRAM_BOT_TOKEN={BOT_TOKEN}\n"),
    )
    .await
}

async fn answered(server: &std::sync::Arc<TelegramServer>) {
    let server = server.clone();
    let sent = tokio::task::spawn_blocking(move || server.wait_sent(1, Duration::from_secs(20)))
        .await
        .unwrap();
    assert_eq!(sent.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_on_telegram_reaches_the_model_as_an_image() {
    let server = std::sync::Arc::new(TelegramServer::start(BOT_TOKEN));
    let gw = gateway(&server, "").await;
    server.user_sends_photo(42, 42, "owner", &photo_with_gps(), "what colour is this?");
    answered(&server).await;
    let body = &gw.fake.requests()[0].body;
    let user = crate::common::last_user_message(body);
    let (text, url) = crate::common::text_and_image(&user);
    assert!(text.contains("what colour is this?"), "{text}");
    assert!(text.contains("shown to you"), "{text}");
    let data = url.strip_prefix("data:image/jpeg;base64,").unwrap();
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &jpeg).unwrap();
    let out = std::process::Command::new(test_python())
        .args([
            "-c",
            "import sys; from PIL import Image; i = Image.open(sys.argv[1]); print(i.size[0], i.size[1], len(i.getexif()))",
            file.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "2048 1365 0",
        "downscaled, no EXIF"
    );
    assert!(!body.to_string().contains(BOT_TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_vision_gets_a_note_instead_of_the_photo() {
    let server = std::sync::Arc::new(TelegramServer::start(BOT_TOKEN));
    let gw = gateway(&server, "[models.\"openai/fake\"]\nvision = false\n").await;
    server.user_sends_photo(42, 42, "owner", &photo_with_gps(), "look");
    answered(&server).await;
    let body: &Value = &gw.fake.requests()[0].body;
    let shown = body.to_string();
    assert!(
        !shown.contains("data:image/"),
        "no picture for a model without vision"
    );
    assert!(
        shown.contains("not shown") && shown.contains("vision = false"),
        "{shown}"
    );
}
