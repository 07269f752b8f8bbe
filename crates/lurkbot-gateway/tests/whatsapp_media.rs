//! Media out on WhatsApp's Cloud API (the Graph API test server takes uploads as Meta does):
//! a reply's `MEDIA:` line sends its picture after the text, uploaded and named by its media
//! id; a voice note `tts` made goes out as audio; a picture the protection model keeps (a link
//! into a skill's secrets) or a file that is no picture is refused in the outbox, never sent.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::Step;
use lurkbot_test_support::whatsapp_server::{WhatsAppServer, signature, text_notification};
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN as GATEWAY_TOKEN};

const TOKEN: &str = "EAAGtest-access-token";
const SECRET: &str = "app-secret-for-tests";
const PHONE: &str = "106540352242922";
const OWNER: &str = "4915550001";
const WAIT: Duration = Duration::from_secs(30);

/// A small PNG made by Pillow (the classic tool).
fn png(path: &std::path::Path, colour: &str) {
    let script = format!(
        "import sys\nfrom PIL import Image\nImage.new('RGB', (32, 24), '{colour}').save(sys.argv[1], 'PNG')\n"
    );
    lurkbot_test_support::venv::run_python(["-c", &script, path.to_str().unwrap()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_sends_its_pictures_and_voice_notes_and_refuses_protected_ones() {
    let server = Arc::new(WhatsAppServer::start(TOKEN, PHONE));
    let reply = "Here is the chart.\nMEDIA: ./workspace/chart.png\n\
                 MEDIA: ./workspace/innocent.png\nMEDIA: ./workspace/notes.txt";
    let gw = Gateway::start_with_env(
        &format!(
            "[tts]\nprovider = \"espeak\"\n[channels.whatsapp]\nmode = \"cloud\"\nbase_url = \"{}\"\nphone_number_id = \"{PHONE}\"\nallow_from = [\"{OWNER}\"]\n",
            server.url()
        ),
        vec![
            Step::call("c1", "tts", json!({"text": "The build is green."})),
            Step::text(reply),
        ],
        &format!(
            "WHATSAPP_ACCESS_TOKEN={TOKEN}\nWHATSAPP_APP_SECRET={SECRET}\nWHATSAPP_VERIFY_TOKEN=v\n"
        ),
    )
    .await;
    let workspace = gw.home.join("workspace");
    png(&workspace.join("chart.png"), "red");
    std::fs::write(workspace.join("notes.txt"), "plain text\n").unwrap();
    // A picture a skill keeps secret, reached through an innocent-looking link.
    let secrets = gw.home.join("skills/demo/secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    png(&secrets.join("qr.png"), "blue");
    std::os::unix::fs::symlink(secrets.join("qr.png"), workspace.join("innocent.png")).unwrap();

    let body = text_notification(PHONE, OWNER, "Ada", "wamid.IN1", "chart please").to_string();
    let status = crate::common::http()
        .post(gw.url("/channels/whatsapp/webhook"))
        .header("content-type", "application/json")
        .header("x-hub-signature-256", signature(SECRET, body.as_bytes()))
        .body(body)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);

    let media = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || server.wait_media(2, WAIT))
            .await
            .unwrap()
    };
    assert_eq!(media.len(), 2, "{media:?}");
    assert_eq!(
        (media[0].kind.as_str(), media[0].mime.as_str()),
        ("image", "image/png")
    );
    assert_eq!(
        media[0].bytes,
        std::fs::read(workspace.join("chart.png")).unwrap()
    );
    assert_eq!(media[0].reply_to.as_deref(), Some("wamid.IN1"));
    assert_eq!(
        (media[1].kind.as_str(), media[1].mime.as_str()),
        ("audio", "audio/ogg")
    );
    assert!(media[1].bytes.starts_with(b"OggS"), "a voice note in OGG");
    let texts = server.sent();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert_eq!(
        texts[0].body, "Here is the chart.",
        "the MEDIA lines left the text"
    );

    // The protected picture and the text file: refused for good in the outbox, never sent.
    let (mut c, _) = Client::connect(&gw, GATEWAY_TOKEN).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let status = loop {
        let status = c.request("channels.status", json!({})).await["payload"].clone();
        if status["outbox"]["failed"] == 2 || tokio::time::Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status["outbox"]["failed"], 2, "{status}");
    let errors = status["outbox"]["undelivered"].to_string();
    assert!(errors.contains("skill secrets"), "{errors}");
    assert!(errors.contains("not a picture"), "{errors}");
    assert_eq!(
        server.wait_media(3, Duration::ZERO).len(),
        2,
        "nothing else was sent"
    );
}
