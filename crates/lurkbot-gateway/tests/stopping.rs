//! Stopping without dropping a turn (ARCHITECTURE.md §6): told to stop while a model call is in
//! flight, the gateway lets the turn finish and reach its client, and meanwhile refuses new
//! work — HTTP 503 with `Retry-After`, `UNAVAILABLE` on the WebSocket, `/ready` 503 while
//! `/health` stays 200 — then stops.

use std::time::Duration;

use lurkbot_llm::fake::{Gate, Step};
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN};

/// Waits (30 s at most) until the scripted model has received a call.
async fn model_call_in_flight(gw: &Gateway) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while gw.fake.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no model call");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_gateway_lets_the_running_turn_finish_and_refuses_new_work() {
    let gate = Gate::new();
    let mut gw = Gateway::start(
        "[gateway]\nshutdown_grace_secs = 60\n",
        vec![Step::Held(
            gate.clone(),
            Box::new(Step::text("Finished after the stop.")),
        )],
    )
    .await;
    gw.fake.record(true);
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let sent = c
        .request("chat.send", json!({"message": "a long one"}))
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    // The model call is in flight.
    model_call_in_flight(&gw).await;
    let base = gw.url("");
    let get = |path: &str| reqwest::Client::new().get(format!("{base}{path}")).send();
    let ready = get("/ready").await.unwrap();
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.text().await.unwrap(), r#"{"ready":true}"#);

    gw.signal_stop();
    // New work is refused, over HTTP with a time to come back, and on the WebSocket.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let refused = loop {
        let res = reqwest::Client::new()
            .post(gw.url("/v1/chat/completions"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(
                json!({"model": "lurkbot", "messages": [{"role": "user", "content": "new"}]})
                    .to_string(),
            )
            .send()
            .await
            .unwrap();
        if res.status() == 503 {
            break res;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never refused: {}",
            res.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(refused.headers()["retry-after"], "5");
    let body = refused.text().await.unwrap();
    assert!(body.contains("the gateway is stopping"), "{body}");
    // A load balancer sends nothing more here: not ready, though alive.
    let ready = get("/ready").await.unwrap();
    assert_eq!(ready.status(), 503);
    assert_eq!(ready.headers()["retry-after"], "5");
    assert!(ready.text().await.unwrap().contains("stopping"));
    assert_eq!(get("/health").await.unwrap().status(), 200);
    let other = c
        .request(
            "chat.send",
            json!({"message": "another", "sessionKey": "agent:main:dm:webchat:other"}),
        )
        .await;
    assert_eq!(other["error"]["code"], "UNAVAILABLE", "{other}");
    assert!(
        other["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("the gateway is stopping"),
        "{other}"
    );
    // The running turn finishes and reaches its client; then the gateway stops.
    gate.open();
    let done = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert_eq!(
        done["payload"]["text"], "Finished after the stop.",
        "{done}"
    );
    gw.stopped_within(Duration::from_secs(30)).await;
    assert_eq!(gw.fake.requests().len(), 1, "no new model call was made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_longer_than_the_grace_is_cancelled_when_it_ends() {
    let gate = Gate::new();
    let mut gw = Gateway::start(
        "[gateway]\nshutdown_grace_secs = 1\n",
        vec![Step::Held(gate.clone(), Box::new(Step::text("too late")))],
    )
    .await;
    gw.fake.record(true);
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    c.request("chat.send", json!({"message": "a very long one"}))
        .await;
    model_call_in_flight(&gw).await;
    gw.signal_stop();
    // The gate never opens: the grace ends, the turn is cancelled and the gateway stops.
    gw.stopped_within(Duration::from_secs(30)).await;
    let history = std::fs::read_dir(gw.home.join("sessions/main"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<String>();
    assert!(history.contains("a very long one"), "{history}");
    assert!(!history.contains("too late"), "{history}");
    gate.open();
}
