//! WhatsApp through Meta's Cloud API, against a Graph API server written from Meta's
//! documentation (`lurkbot_test_support::whatsapp_server`) and webhooks signed as Meta signs
//! them: the verification challenge right and wrong; unsigned and wrongly signed posts refused
//! with nothing recorded and the model never called; a message answered (quoted, in WhatsApp's
//! formatting) after a 429; a redelivered `wamid` answered once; a stranger under the allowlist
//! not answered; a `failed` status (131047) shown in the outbox and the channel's status, not
//! retried; a picture fetched by its media id reaching the model as an image; the route
//! absent where no WhatsApp channel runs; and the linked device dialling its endpoint with the
//! web client's origin, its link shown in `channels.status`.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::Step;
use lurkbot_test_support::whatsapp_server::{
    Sent, WhatsAppServer, failed_status, notification, signature, text_notification,
};
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN as GATEWAY_TOKEN, last_user_message, text_and_image};

const TOKEN: &str = "EAAGtest-access-token";
const SECRET: &str = "app-secret-for-tests";
const VERIFY: &str = "verify-me-please";
const PHONE: &str = "106540352242922";
const OWNER: &str = "4915550001";
const WAIT: Duration = Duration::from_secs(20);

async fn sent(server: &Arc<WhatsAppServer>, n: usize) -> Vec<Sent> {
    let server = server.clone();
    tokio::task::spawn_blocking(move || server.wait_sent(n, WAIT))
        .await
        .unwrap()
}

/// POSTs `body` to the webhook with `signature` (as Meta does, without the gateway token).
async fn post(gw: &Gateway, body: &[u8], signature: Option<&str>) -> u16 {
    let mut request = crate::common::http()
        .post(gw.url("/channels/whatsapp/webhook"))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(s) = signature {
        request = request.header("x-hub-signature-256", s);
    }
    request.send().await.unwrap().status().as_u16()
}

/// POSTs `body` signed with the app secret, as Meta does.
async fn post_signed(gw: &Gateway, body: &str) -> u16 {
    post(
        gw,
        body.as_bytes(),
        Some(&signature(SECRET, body.as_bytes())),
    )
    .await
}

async fn verify(gw: &Gateway, token: &str) -> (u16, String) {
    let answer = crate::common::http()
        .get(gw.url(&format!(
            "/channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token={token}&hub.challenge=1158201444"
        )))
        .send()
        .await
        .unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whatsapp_cloud_webhooks_are_verified_signed_recorded_and_answered_once() {
    let server = Arc::new(WhatsAppServer::start(TOKEN, PHONE));
    let gw = Gateway::start_with_env(
        &format!(
            "[channels.whatsapp]\nmode = \"cloud\"\nbase_url = \"{}\"\nphone_number_id = \"{PHONE}\"\ndm_policy = \"allowlist\"\nallow_from = [\"{OWNER}\"]\n",
            server.url()
        ),
        vec![
            Step::text("**Done**, and ~~nothing~~ *else*"),
            Step::text("Second answer."),
        ],
        &format!(
            "WHATSAPP_ACCESS_TOKEN={TOKEN}\nWHATSAPP_APP_SECRET={SECRET}\nWHATSAPP_VERIFY_TOKEN={VERIFY}\n"
        ),
    )
    .await;

    // Meta's verification: the challenge echoed for the right token only.
    assert_eq!(verify(&gw, VERIFY).await, (200, "1158201444".into()));
    assert_eq!(verify(&gw, "guess").await.0, 403);

    // Unsigned, wrongly signed and signed-for-another-body posts: refused, nothing recorded.
    let first = text_notification(PHONE, OWNER, "Ada", "wamid.IN1", "status?").to_string();
    assert_eq!(post(&gw, first.as_bytes(), None).await, 403);
    assert_eq!(
        post(
            &gw,
            first.as_bytes(),
            Some(&signature("wrong-secret", first.as_bytes()))
        )
        .await,
        403
    );
    assert_eq!(
        post(
            &gw,
            first.as_bytes(),
            Some(&signature(SECRET, b"another body"))
        )
        .await,
        403
    );
    assert_eq!(
        post(&gw, first.as_bytes(), Some("sha256=not-hex")).await,
        403
    );
    assert!(gw.fake.requests().is_empty(), "the model was called");
    // Had a refused post been recorded, the signed one below (the same wamid) would be a
    // redelivery and never answered.

    // Signed: 200 once recorded, answered after one 429, quoting the message, formatted.
    server.rate_limit_next(1);
    assert_eq!(post_signed(&gw, &first).await, 200);
    let replies = sent(&server, 1).await;
    assert_eq!(
        replies,
        vec![Sent {
            to: OWNER.into(),
            body: "*Done*, and ~nothing~ _else_".into(),
            reply_to: Some("wamid.IN1".into()),
        }]
    );
    assert_eq!(server.attempts(), 2, "one 429, then sent");

    // The same wamid delivered again: 200, not answered again. A stranger: not answered.
    assert_eq!(post_signed(&gw, &first).await, 200);
    let stranger = text_notification(PHONE, "4470000000", "Eve", "wamid.X", "hi").to_string();
    assert_eq!(post_signed(&gw, &stranger).await, 200);
    let second = text_notification(PHONE, OWNER, "Ada", "wamid.IN2", "and now?").to_string();
    assert_eq!(post_signed(&gw, &second).await, 200);
    let replies = sent(&server, 2).await;
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(replies[1].body, "Second answer.");
    assert_eq!(replies[1].reply_to.as_deref(), Some("wamid.IN2"));
    assert_eq!(
        gw.fake.requests().len(),
        2,
        "the redelivery or the stranger reached the model"
    );
    let asked = last_user_message(&gw.fake.requests()[0].body);
    assert!(
        asked["content"].as_str().unwrap().contains("status?"),
        "{asked}"
    );

    // WhatsApp says the second answer was not delivered (outside the 24-hour window): the
    // outbox keeps it as failed, with why, and the channel's status shows it; nothing resent.
    let failed = failed_status(PHONE, OWNER, "wamid.OUT2", 131047).to_string();
    assert_eq!(post_signed(&gw, &failed).await, 200);
    let (mut c, _) = Client::connect(&gw, GATEWAY_TOKEN).await;
    let status = c.request("channels.status", json!({})).await["payload"].clone();
    assert_eq!(status["outbox"]["failed"], 1, "{status}");
    let undelivered = &status["outbox"]["undelivered"][0];
    assert_eq!(undelivered["text"], "Second answer.", "{status}");
    assert!(
        undelivered["error"].as_str().unwrap().contains("131047"),
        "{status}"
    );
    let channel = &status["channels"][0];
    assert_eq!(channel["name"], "whatsapp");
    assert!(
        channel["lastError"].as_str().unwrap().contains("131047"),
        "{status}"
    );
    assert_eq!(server.sent().len(), 2, "a failed message is not sent again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_is_absent_where_no_whatsapp_channel_runs() {
    let gw = Gateway::start("", vec![]).await;
    assert_eq!(verify(&gw, VERIFY).await.0, 404);
    let body = text_notification(PHONE, OWNER, "Ada", "wamid.Z", "hello").to_string();
    assert_eq!(post_signed(&gw, &body).await, 404);
}

/// A small PNG made by Pillow (the classic tool), as a phone would send it.
fn png() -> Vec<u8> {
    let file = tempfile::NamedTempFile::new().unwrap();
    let script = "import sys\nfrom PIL import Image\nImage.new('RGB', (64, 48), (200, 30, 30)).save(sys.argv[1], 'PNG')\n";
    lurkbot_test_support::venv::run_python(["-c", script, file.path().to_str().unwrap()]);
    std::fs::read(file.path()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_on_whatsapp_is_fetched_by_its_media_id_and_shown_to_the_model() {
    let server = Arc::new(WhatsAppServer::start(TOKEN, PHONE));
    server.add_media("1479537139650973", "image/png", png());
    let port = server
        .url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let gw = Gateway::start_with_env(
        &format!(
            "[channels.whatsapp]\nmode = \"cloud\"\nbase_url = \"{}\"\nphone_number_id = \"{PHONE}\"\nallow_from = [\"{OWNER}\"]\nfetch_media = true\n[network]\nallow_hosts = [\"127.0.0.1:{port}\"]\n",
            server.url()
        ),
        vec![Step::text("A red picture.")],
        &format!(
            "WHATSAPP_ACCESS_TOKEN={TOKEN}\nWHATSAPP_APP_SECRET={SECRET}\nWHATSAPP_VERIFY_TOKEN={VERIFY}\n"
        ),
    )
    .await;
    let body = notification(
        PHONE,
        OWNER,
        "Ada",
        json!({"from": OWNER, "id": "wamid.PIC", "timestamp": "1764300000", "type": "image",
            "image": {"id": "1479537139650973", "mime_type": "image/png",
                "sha256": "x", "caption": "what colour?"}}),
    )
    .to_string();
    assert_eq!(post_signed(&gw, &body).await, 200);
    assert_eq!(sent(&server, 1).await[0].body, "A red picture.");
    let user = last_user_message(&gw.fake.requests()[0].body);
    let (text, url) = text_and_image(&user);
    assert!(text.contains("what colour?"), "{user}");
    assert!(url.starts_with("data:image/"), "{user}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_goes_in_pieces_within_whatsapps_limit() {
    let server = Arc::new(WhatsAppServer::start(TOKEN, PHONE));
    let long = "Lorem ipsum dolor sit amet. ".repeat(220);
    let gw = Gateway::start_with_env(
        &format!(
            "[channels.whatsapp]\nmode = \"cloud\"\nbase_url = \"{}\"\nphone_number_id = \"{PHONE}\"\nallow_from = [\"{OWNER}\"]\n",
            server.url()
        ),
        vec![Step::text(&long)],
        &format!(
            "WHATSAPP_ACCESS_TOKEN={TOKEN}\nWHATSAPP_APP_SECRET={SECRET}\nWHATSAPP_VERIFY_TOKEN={VERIFY}\n"
        ),
    )
    .await;
    let body = text_notification(PHONE, OWNER, "Ada", "wamid.LONG", "tell me a lot").to_string();
    assert_eq!(post_signed(&gw, &body).await, 200);
    let pieces = sent(&server, 2).await;
    assert_eq!(pieces.len(), 2, "{} characters in two pieces", long.len());
    assert!(pieces.iter().all(|p| p.body.chars().count() <= 4096));
    assert_eq!(
        pieces
            .iter()
            .map(|p| p.body.trim())
            .collect::<Vec<_>>()
            .join(" "),
        long.trim()
    );
    assert_eq!(pieces[0].reply_to.as_deref(), Some("wamid.LONG"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linked_device_dials_its_endpoint_and_shows_its_link() {
    // WhatsApp's own servers are not reachable from a test: the device dials `base_url`
    // (here a socket that reads the WebSocket request and closes), and its link shows.
    let relay = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = relay.local_addr().unwrap().port();
    let gw = Gateway::start_with_env(
        &format!(
            "[channels.whatsapp]\nallow_from = [\"4915550001\"]\nbase_url = \"ws://127.0.0.1:{port}/ws/chat\"\n"
        ),
        vec![],
        "",
    )
    .await;
    let (mut socket, _) = tokio::time::timeout(WAIT, relay.accept())
        .await
        .unwrap()
        .unwrap();
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.ends_with(b"\r\n\r\n") {
        let n = tokio::io::AsyncReadExt::read(&mut socket, &mut buf)
            .await
            .unwrap();
        assert!(n > 0, "the request ended early");
        request.extend_from_slice(&buf[..n]);
    }
    let request = String::from_utf8_lossy(&request).to_ascii_lowercase();
    assert!(request.starts_with("get /ws/chat http/1.1"), "{request}");
    assert!(request.contains("upgrade: websocket"), "{request}");
    assert!(
        request.contains("origin: https://web.whatsapp.com"),
        "{request}"
    );
    drop(socket);
    let (mut c, _) = Client::connect(&gw, GATEWAY_TOKEN).await;
    let status = c.request("channels.status", json!({})).await["payload"].clone();
    let channel = &status["channels"][0];
    assert_eq!(channel["name"], "whatsapp", "{status}");
    assert_eq!(channel["link"]["state"], "unlinked", "{status}");
    assert!(channel["lastError"].is_null(), "{status}");
    assert_eq!(
        verify(&gw, VERIFY).await.0,
        404,
        "no webhook without the Cloud mode"
    );
}
