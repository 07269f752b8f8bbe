//! Compaction against the scripted provider: triggered by the token estimate (staged summaries
//! merged into one) and by a provider context-overflow error; the summary is written to the
//! transcript and replaces the old messages in the next request.

use lurkbot_agent::{AgentEvent, Entry, Sessions};
use lurkbot_agent::{MERGE_SUMMARIES_INSTRUCTIONS, SUMMARIZER_SYSTEM};
use lurkbot_core::SessionKey;
use lurkbot_llm::fake::Step;
use serde_json::Value;

use crate::common::{agent, setup};

/// The system prompt of a recorded request, in either wire format.
fn system(body: &Value) -> String {
    body["system"]
        .as_str()
        .or(body["messages"][0]["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match m["content"].as_str() {
            Some(text) => text.to_string(),
            // Anthropic: content blocks.
            None => m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect(),
        })
        .collect()
}

fn compactions(s: &crate::common::Setup) -> Vec<(String, usize)> {
    let sessions = Sessions::open(&s.home, "main");
    let entry = sessions.get_or_create(&SessionKey::main()).unwrap();
    sessions
        .history(&entry.session_id)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Compaction { summary, kept, .. } => Some((summary, kept)),
            Entry::Message { .. } => None,
        })
        .collect()
}

#[tokio::test]
async fn the_estimate_triggers_staged_summaries() {
    let first = format!("FIRST {}", "alpha ".repeat(2000));
    let second = format!("SECOND {}", "beta ".repeat(2400));
    let s = setup(vec![
        Step::text("r1"),
        Step::text("partial one"),
        Step::text("partial two"),
        Step::text("MERGED SUMMARY"),
        Step::text("r2"),
        Step::text("r3"),
    ])
    .await;
    let config = "[agent]\ncontext_window = 8000\nreserve_tokens = 2000\n";
    let mut a = agent(&s, "openai/m", config);
    let key = SessionKey::main();
    a.turn(&key, &first, &mut |_| {}).await.unwrap();
    assert!(compactions(&s).is_empty(), "the first turn fits");
    let mut events = Vec::new();
    let out = a
        .turn(&key, &second, &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(out.text, "r2");
    assert!(events.contains(&AgentEvent::Compacted {
        summarized: 2,
        kept: 1
    }));

    let requests = s.fake.requests();
    assert_eq!(requests.len(), 5);
    // Two partial summaries (the old part is over a quarter of the window), then the merge.
    for r in &requests[1..4] {
        assert_eq!(system(&r.body), SUMMARIZER_SYSTEM);
        assert!(r.body["tools"].as_array().is_none_or(Vec::is_empty));
    }
    let part1 = &user_texts(&requests[1].body)[0];
    assert!(
        part1.contains("user: FIRST alpha") && part1.contains('…'),
        "{part1}"
    );
    assert!(!part1.contains("SECOND"));
    assert!(user_texts(&requests[2].body)[0].contains("assistant: r1"));
    let merge = &user_texts(&requests[3].body)[0];
    assert!(merge.starts_with(MERGE_SUMMARIES_INSTRUCTIONS));
    assert!(
        merge.contains("--- Part 1 ---\npartial one")
            && merge.contains("--- Part 2 ---\npartial two")
    );
    // The turn's request: the summary in the system prompt, the old messages gone, the current
    // message verbatim.
    let next = &requests[4].body;
    assert!(system(next).contains("## Summary of the earlier conversation\nMERGED SUMMARY"));
    let users = user_texts(next);
    assert_eq!(users, std::slice::from_ref(&second));
    assert_eq!(compactions(&s), [("MERGED SUMMARY".to_string(), 1)]);
    // Every call is recorded, the summary calls included.
    let config = lurkbot_core::Config::default();
    let zone = lurkbot_agent::usage::zone(&config);
    let since = lurkbot_agent::usage::today(&zone) - chrono::Days::new(1);
    let records = lurkbot_agent::usage::read_since(&s.home, &zone, since);
    assert_eq!(records.len(), 5, "{records:?}");

    // The next turn builds on the compacted context without compacting again.
    a.turn(&key, "thanks", &mut |_| {}).await.unwrap();
    let requests = s.fake.requests();
    assert_eq!(requests.len(), 6);
    let last = &requests[5].body;
    assert!(system(last).contains("MERGED SUMMARY"));
    assert_eq!(user_texts(last), [second, "thanks".to_string()]);
    assert_eq!(compactions(&s).len(), 1);
}

#[tokio::test]
async fn a_context_overflow_error_compacts_and_retries() {
    let s = setup(vec![
        Step::text("r1"),
        Step::Error {
            status: 400,
            message: "This model's maximum context length is 8192 tokens.".into(),
        },
        Step::text("SHORT SUMMARY"),
        Step::text("r2"),
    ])
    .await;
    let mut a = agent(&s, "anthropic/m", "");
    let key = SessionKey::main();
    a.turn(&key, "hello there", &mut |_| {}).await.unwrap();
    let out = a.turn(&key, "and now?", &mut |_| {}).await.unwrap();
    assert_eq!(out.text, "r2");
    let requests = s.fake.requests();
    assert_eq!(requests.len(), 4);
    // One summary request (the old part is small), then the retried turn.
    assert_eq!(system(&requests[2].body), SUMMARIZER_SYSTEM);
    assert!(user_texts(&requests[2].body)[0].contains("user: hello there"));
    assert!(system(&requests[3].body).contains("SHORT SUMMARY"));
    assert_eq!(user_texts(&requests[3].body), ["and now?"]);
    assert_eq!(compactions(&s), [("SHORT SUMMARY".to_string(), 1)]);
}

#[tokio::test]
async fn a_summary_call_that_would_pass_a_cap_is_not_sent() {
    let first = format!("FIRST {}", "alpha ".repeat(2000));
    let second = format!("SECOND {}", "beta ".repeat(2400));
    let s = setup(vec![Step::text("r1"), Step::text("never sent")]).await;
    let window = "[agent]\ncontext_window = 8000\nreserve_tokens = 2000\n";
    let mut a = agent(&s, "openai/m", window);
    let key = SessionKey::main();
    a.turn(&key, &first, &mut |_| {}).await.unwrap();
    // A day's cap with room for less than one summary call (each asks for up to 2,048).
    let zone = lurkbot_agent::usage::zone(&lurkbot_core::Config::default());
    let since = lurkbot_agent::usage::today(&zone) - chrono::Days::new(1);
    let used: u64 = lurkbot_agent::usage::read_since(&s.home, &zone, since)
        .iter()
        .map(|r| r.tokens())
        .sum();
    let capped = format!("{window}[budgets]\ndaily_tokens = {}\n", used + 1000);
    let mut a = agent(&s, "openai/m", &capped);
    let error = a.turn(&key, &second, &mut |_| {}).await.unwrap_err();
    assert!(error.to_string().contains("BudgetExceeded"), "{error}");
    assert_eq!(s.fake.requests().len(), 1, "the summary call was not sent");
    assert!(compactions(&s).is_empty());
}

#[tokio::test]
async fn an_overflow_with_nothing_to_compact_is_an_error() {
    let s = setup(vec![Step::Error {
        status: 400,
        message: "prompt is too long: 300000 tokens > 200000 maximum".into(),
    }])
    .await;
    let mut a = agent(&s, "anthropic/m", "");
    let err = a
        .turn(&SessionKey::main(), "a single huge message", &mut |_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("prompt is too long"), "{err}");
    assert_eq!(s.fake.requests().len(), 1, "no summary request for nothing");
    assert!(compactions(&s).is_empty());
}

#[tokio::test]
async fn a_small_local_server_is_learned_from_its_overflow_error() {
    // llama-server started with `-c 4096` answers an overflow in its own words.
    let s = setup(vec![
        Step::text("r1"),
        Step::Error {
            status: 400,
            message: "request (4132 tokens) exceeds the available context size (4096 tokens), try increasing it".into(),
        },
        Step::text("SHORT SUMMARY"),
        Step::text("r2"),
        Step::text("r3"),
    ])
    .await;
    let mut a = agent(&s, "openai/m", "");
    let key = SessionKey::main();
    a.turn(&key, "hello there", &mut |_| {}).await.unwrap();
    let out = a.turn(&key, "and now?", &mut |_| {}).await.unwrap();
    assert_eq!(
        out.text, "r2",
        "the session recovered instead of failing every turn"
    );
    assert_eq!(compactions(&s).len(), 1);
    let requests = s.fake.requests();
    // Before: the configured default; after: a quarter of the learned 4,096-token window.
    assert_eq!(requests[0].body["max_tokens"], 4096);
    assert_eq!(requests[3].body["max_tokens"], 1024);
    let out = a.turn(&key, "thanks", &mut |_| {}).await.unwrap();
    assert_eq!(out.text, "r3");
    assert_eq!(s.fake.requests()[4].body["max_tokens"], 1024);
}

#[tokio::test]
async fn max_output_tokens_caps_every_reply() {
    let s = setup(vec![Step::text("r1")]).await;
    let mut a = agent(&s, "openai/m", "[agent]\nmax_output_tokens = 300\n");
    a.turn(&SessionKey::main(), "hi", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(s.fake.requests()[0].body["max_tokens"], 300);
}
