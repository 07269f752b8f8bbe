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
