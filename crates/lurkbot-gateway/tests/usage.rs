//! `usage.summary`: a turn through the gateway is recorded and summed; the budgets' fill is
//! reported; bad parameters are refused.

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_summed_by_usage_summary() {
    let gw = Gateway::start(
        "[budgets]\ndaily_tokens = 1000000\n",
        vec![Step::text("Hello.")],
    )
    .await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let sent = c.request("chat.send", json!({"message": "hello"})).await;
    assert_eq!(sent["ok"], true, "{sent}");
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    let answer = c
        .request("usage.summary", json!({"since": "7d", "by": "model"}))
        .await;
    assert_eq!(answer["ok"], true, "{answer}");
    let summary = &answer["payload"];
    assert_eq!(summary["by"], "model");
    assert_eq!(summary["rows"][0]["key"], "openai/fake");
    assert_eq!(summary["rows"][0]["calls"], 1);
    assert_eq!(summary["rows"][0]["inputTokens"], 100);
    let tokens = summary["total"]["tokens"].as_f64().unwrap();
    assert_eq!(summary["budgets"][0]["cap"], "budgets.daily_tokens");
    assert_eq!(summary["budgets"][0]["used"].as_f64(), Some(tokens));
    let bad = c.request("usage.summary", json!({"by": "planet"})).await;
    assert_eq!(bad["ok"], false);
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("day, agent, model or session")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_a_budget_is_not_sent_and_the_gateway_says_so() {
    let gw = Gateway::start("[budgets]\ndaily_tokens = 10\n", vec![Step::text("never")]).await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let sent = c.request("chat.send", json!({"message": "hello"})).await;
    assert_eq!(sent["ok"], true, "{sent}");
    let event = c.event(|e| e["event"] == "budget.exceeded").await;
    let message = event["payload"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("BudgetExceeded: budgets.daily_tokens is 10 tokens"),
        "{message}"
    );
    assert_eq!(event["payload"]["sessionKey"], "agent:main:main");
    let error = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "error")
        .await;
    assert_eq!(error["payload"]["message"], message);
    assert!(
        gw.fake.requests().is_empty(),
        "nothing was sent to the model"
    );
}

/// Budgets are reserved before a call (ARCHITECTURE.md §5.1): twenty API requests at once on
/// twenty sessions, under `daily_tokens = 4000`, while every call that reaches the model hangs
/// there — each hello turn's estimate is held while its call is in flight, so only what fits
/// under the cap is sent and the rest are refused at once with `BudgetExceeded`. (Checked
/// without holding, all twenty passed: nothing was recorded yet when each was checked.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_cannot_overrun_a_budget_together() {
    const CALLS: usize = 20;
    let stalls = (0..CALLS).map(|_| Step::Stall("…".into())).collect();
    let gw = Gateway::start("[budgets]\ndaily_tokens = 4000\n", stalls).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..CALLS {
        let request = client
            .post(gw.url("/v1/chat/completions"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("x-lurkbot-session", format!("agent:main:dm:api:p{i}"))
            .body(json!({"messages": [{"role": "user", "content": "hello"}]}).to_string());
        let tx = tx.clone();
        tokio::spawn(async move {
            if let Ok(res) = request.send().await {
                let status = res.status().as_u16();
                let _ = tx.send((status, res.text().await.unwrap_or_default()));
            }
        });
    }
    // Every request either reaches the model (and hangs there) or is refused: wait for both
    // counts to add up. The model's count grows without a message on `rx`, so the condition
    // is looked at again between short waits (a long wait on `rx` alone missed the last call
    // reaching the model).
    let mut refused = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while refused.len() + gw.fake.requests().len() < CALLS {
        match tokio::time::timeout(std::time::Duration::from_millis(50), rx.recv()).await {
            Ok(Some(answer)) => refused.push(answer),
            Err(_) if tokio::time::Instant::now() < deadline => {}
            _ => panic!(
                "{} refused and {} sent of {CALLS}",
                refused.len(),
                gw.fake.requests().len()
            ),
        }
    }
    let sent = gw.fake.requests().len();
    assert!(
        (1..=2).contains(&sent),
        "{sent} calls were sent under a 4000-token cap"
    );
    assert_eq!(refused.len(), CALLS - sent);
    for (status, body) in &refused {
        assert!(
            body.contains("BudgetExceeded: budgets.daily_tokens is 4000 tokens"),
            "{status} {body}"
        );
    }
}

/// ARCHITECTURE.md §9's prompt budget in the web UI: a "hello" from a client that shows widgets
/// (`caps: ["canvas"]`), on a home with the bundled skills, with every tool a gateway session
/// is offered — `gateway`, `canvas`, and `tts` where a speech provider is set up (espeak-ng is
/// installed by scripts/test.sh). Measured on the wire like the CLI's: the messages and tools
/// as the provider received them, compact JSON, characters / 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_ui_hello_costs_at_most_3000_prompt_tokens() {
    use crate::common::connect_params;
    let skills = lurkbot_term::bundled_skills(&lurkbot_term::default_registry());
    let files: Vec<(&str, String)> = skills
        .iter()
        .map(|(p, c)| (p.as_str(), c.clone()))
        .collect();
    let gw = Gateway::start_with_files("", vec![Step::text("Hi.")], &files).await;
    let mut c = Client::open(&gw).await;
    let challenge = c.recv().await.expect("challenge");
    assert_eq!(challenge["event"], "connect.challenge");
    let mut params = connect_params(TOKEN);
    params["caps"] = json!(["canvas"]);
    assert_eq!(c.request("connect", params).await["ok"], true);
    let sent = c.request("chat.send", json!({"message": "hello"})).await;
    assert_eq!(sent["ok"], true, "{sent}");
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    let body = &gw.fake.requests()[0].body;
    let tools = body["tools"].to_string();
    for offered in ["\"gateway\"", "\"canvas\""] {
        assert!(tools.contains(offered), "{offered} not offered: {tools}");
    }
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<available_skills>")
    );
    let chars = body["messages"].to_string().chars().count() + tools.chars().count();
    let tokens = chars.div_ceil(4);
    eprintln!("web UI hello turn: {tokens} prompt tokens");
    assert!(
        tokens <= 3_000,
        "the web UI's hello prompt is {tokens} tokens, over the 3,000 budget"
    );
}
