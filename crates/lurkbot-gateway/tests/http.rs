//! The HTTP side of a real gateway: `/health` and the UI without a token, the OpenAI-compatible
//! API (auth, models, non-stream and stream completions, sessions, errors) and the hooks.

use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, HOOKS_TOKEN, TOKEN};

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

pub(crate) async fn post(
    gw: &Gateway,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut req = http()
        .post(gw.url(path))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_ui_and_models() {
    let gw = Gateway::start("[agents.ops]\n", vec![]).await;
    let res = http().get(gw.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        serde_json::from_str::<Value>(&res.text().await.unwrap()).unwrap()["ok"],
        true
    );
    let ui = http().get(gw.url("/")).send().await.unwrap();
    assert_eq!(ui.status(), 200);
    assert!(
        ui.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(ui.text().await.unwrap().contains("LurkBot"));

    let res = http().get(gw.url("/v1/models")).send().await.unwrap();
    assert_eq!(res.status(), 401);
    let res = http()
        .get(gw.url("/v1/models"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    let models = serde_json::from_str::<Value>(&res.text().await.unwrap()).unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["lurkbot", "lurkbot/main", "lurkbot/ops"]);
    // A foreign browser origin is refused even with the token.
    let res = http()
        .get(gw.url("/v1/models"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_stream_and_not() {
    let gw = Gateway::start(
        "",
        vec![
            Step::call("c1", "terminal_exec", json!({"command": "help"})),
            Step::text("You have zip and tar."),
            Step::text("Streamed answer here."),
            Step::text("Stateless again."),
            Step::text("Second in session."),
        ],
    )
    .await;
    let (status, body) = post(
        &gw,
        "/v1/chat/completions",
        Some(TOKEN),
        json!({"model": "lurkbot", "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "what commands?"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "You have zip and tar."
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["usage"]["total_tokens"].as_u64().unwrap() > 0);
    // The earlier messages were given to the agent as context; tool activity stayed hidden.
    let sent = &gw.fake.requests()[0].body;
    let texts = sent["messages"].to_string();
    assert!(
        texts.contains("Be terse.") && texts.contains("\"hello\""),
        "{texts}"
    );

    // Streaming, on a named session.
    let res = http()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-lurkbot-session", "agent:main:dm:api:me")
        .body(
            json!({"model": "lurkbot/main", "stream": true,
            "messages": [{"role": "user", "content": "stream please"}]})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = res.text().await.unwrap();
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    let chunks: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Streamed answer here.");
    assert!(chunks.len() >= 4, "role, several deltas, stop: {chunks:?}");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    // The session keeps its history: the next request sends only the new message.
    let (status, body) = post(
        &gw,
        "/v1/chat/completions",
        Some(TOKEN),
        json!({"messages": [{"role": "user", "content": "again"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let res = http()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-lurkbot-session", "agent:main:dm:api:me")
        .body(json!({"messages": [{"role": "user", "content": "second"}]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let last = gw.fake.requests().last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("stream please") && last.contains("second"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_refusals() {
    let gw = Gateway::start("", vec![]).await;
    let cases = [
        (
            json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}),
            404,
            "lurkbot",
        ),
        (
            json!({"model": "lurkbot/zzz", "messages": [{"role": "user", "content": "x"}]}),
            404,
            "no agent 'zzz'",
        ),
        (json!({"messages": []}), 400, "messages"),
        (
            json!({"messages": [{"role": "assistant", "content": "x"}]}),
            400,
            "last message",
        ),
        (
            json!({"messages": [{"role": "user", "content": "  "}]}),
            400,
            "empty",
        ),
    ];
    for (body, status, text) in cases {
        let (got, res) = post(&gw, "/v1/chat/completions", Some(TOKEN), body.clone()).await;
        assert_eq!(got, status, "{body} → {res}");
        assert!(
            res["error"]["message"].as_str().unwrap().contains(text),
            "{res}"
        );
    }
    let res = http()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let (got, _) = post(&gw, "/v1/chat/completions", Some("nope"), json!({})).await;
    assert_eq!(got, 401);
    assert!(
        !gw.home.join("sessions/zzz").exists(),
        "no state for an unknown agent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_need_their_own_token_and_run_turns() {
    let gw = Gateway::start("", vec![Step::text("Woken."), Step::text("Hooked.")]).await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let (status, _) = post(&gw, "/hooks/wake", Some(TOKEN), json!({"text": "x"})).await;
    assert_eq!(status, 401, "the gateway token is not the hooks token");
    let (status, body) = post(&gw, "/hooks/wake", Some(HOOKS_TOKEN), json!({})).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(
        &gw,
        "/hooks/wake",
        Some(HOOKS_TOKEN),
        json!({"text": "mail arrived"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["sessionKey"], "agent:main:main");
    let waited = c
        .request(
            "agent.wait",
            json!({"runId": body["runId"], "timeoutMs": 10000}),
        )
        .await;
    assert_eq!(waited["payload"]["text"], "Woken.");
    let sent = gw.fake.requests()[0].body["messages"].to_string();
    assert!(sent.contains("[system event] mail arrived"), "{sent}");

    let (status, body) = post(
        &gw,
        "/hooks/agent",
        Some(HOOKS_TOKEN),
        json!({"message": "summarise"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert!(body["sessionKey"].as_str().unwrap().starts_with("hook:"));
    let waited = c
        .request(
            "agent.wait",
            json!({"runId": body["runId"], "timeoutMs": 10000}),
        )
        .await;
    assert_eq!(waited["payload"]["text"], "Hooked.");
    assert!(
        !gw.state
            .host
            .live_sessions()
            .iter()
            .any(|k| k.starts_with("hook:")),
        "a hook's own session is released when its turn ends"
    );

    let off = Gateway::start_with("", vec![], Some(TOKEN), None).await;
    let (status, body) = post(
        &off,
        "/hooks/agent",
        Some(HOOKS_TOKEN),
        json!({"message": "x"}),
    )
    .await;
    assert_eq!(status, 404);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("LURKBOT_HOOKS_TOKEN")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_turn_needing_approval_without_clients_is_denied_at_once() {
    let gw = Gateway::start(
        "[permissions]\ncalendar = \"read-write\"\n",
        vec![
            Step::call(
                "c1",
                "terminal_exec",
                json!({"command": "cal delete-event --id 1 --confirm"}),
            ),
            Step::text("It was not approved."),
        ],
    )
    .await;
    let (status, body) = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        post(
            &gw,
            "/v1/chat/completions",
            Some(TOKEN),
            json!({"messages": [{"role": "user", "content": "delete it"}]}),
        ),
    )
    .await
    .expect("no 10-minute wait for an approval nobody can give");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "It was not approved."
    );
    let result = gw.fake.requests()[1].body["messages"].to_string();
    assert!(result.contains("denied"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_turns_are_one_per_session_and_chat_abort_reaches_them() {
    let gw = Gateway::start("", vec![Step::Stall("Thinking".into())]).await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let session = "agent:main:dm:api:slow";
    let request = |text: &str| {
        http()
            .post(gw.url("/v1/chat/completions"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("x-lurkbot-session", session)
            .body(json!({"messages": [{"role": "user", "content": text}]}).to_string())
            .send()
    };
    let slow = tokio::spawn(request("take your time"));
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "delta")
        .await;
    let busy = request("me too").await.unwrap();
    assert_eq!(busy.status(), 409);
    let also_busy = c
        .request(
            "chat.send",
            json!({"message": "and me", "sessionKey": session}),
        )
        .await;
    assert_eq!(also_busy["error"]["code"], "UNAVAILABLE");
    let aborted = c
        .request("chat.abort", json!({"sessionKey": session}))
        .await;
    assert_eq!(aborted["payload"]["aborted"], true);
    let res = slow.await.unwrap().unwrap();
    assert_eq!(res.status(), 503);
    let body: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["type"], "aborted");
}
