//! WhatsApp's Cloud API across a SIGKILL (ARCHITECTURE.md §6.1.1, §6.3): a webhook answered
//! 200 — its message recorded — whose turn is killed during its model call is answered once
//! after the restart, and Meta delivering the same notification again to the new process
//! changes nothing.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::whatsapp_server::{WhatsAppServer, signature, text_notification};

use crate::nothing_lost::{append_config, kill, model_env, start_with, until};
use crate::util::Test;

const TOKEN: &str = "EAAGrestart-token";
const SECRET: &str = "restart-app-secret";
const PHONE: &str = "106540352242922";
const OWNER: &str = "4915550001";

/// POSTs a signed notification to the gateway on `addr`, as Meta does: the status.
fn deliver(addr: &str, body: &str) -> u16 {
    crate::raw_http::http(
        addr,
        &format!(
            "POST /channels/whatsapp/webhook HTTP/1.1\r\nContent-Type: application/json\r\n\
             X-Hub-Signature-256: {}",
            signature(SECRET, body.as_bytes())
        ),
        body,
    )
    .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whatsapp_message_killed_during_its_model_call_is_answered_once() {
    let server = Arc::new(WhatsAppServer::start(TOKEN, PHONE));
    let t = Test::init();
    append_config(
        &t,
        &format!(
            "[channels.whatsapp]\nmode = \"cloud\"\nbase_url = \"{}\"\nphone_number_id = \"{PHONE}\"\nallow_from = [\"{OWNER}\"]",
            server.url()
        ),
    );
    std::fs::write(
        t.path(".env"),
        format!(
            "WHATSAPP_ACCESS_TOKEN={TOKEN}\nWHATSAPP_APP_SECRET={SECRET}\nWHATSAPP_VERIFY_TOKEN=v\n"
        ),
    )
    .unwrap();
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Answered once after the kill."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);
    let notification =
        text_notification(PHONE, OWNER, "Ada", "wamid.KILL1", "still with me?").to_string();

    let gw = start_with(&t, &env);
    let addr = gw.addr.clone();
    let body = notification.clone();
    let status = tokio::task::spawn_blocking(move || deliver(&addr, &body))
        .await
        .unwrap();
    assert_eq!(status, 200, "answered once recorded");
    until("the model call", || fake.requests().len() == 1).await;
    kill(gw);

    let gw = start_with(&t, &env);
    let addr = gw.addr.clone();
    let body = notification.clone();
    let again = tokio::task::spawn_blocking(move || deliver(&addr, &body))
        .await
        .unwrap();
    assert_eq!(again, 200, "a redelivery is acknowledged");
    let waiting = server.clone();
    let sent = tokio::task::spawn_blocking(move || waiting.wait_sent(1, Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].body, "Answered once after the kill.");
    assert_eq!(sent[0].reply_to.as_deref(), Some("wamid.KILL1"));
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(server.sent().len(), 1, "one answer");
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
}
