//! Usage records from real turns against the scripted provider (which reports 100 prompt
//! tokens per call), `lurkbot usage` summing them, and a daily cap that keeps the next call
//! from being sent at all.

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::Value;

use crate::util::Test;

fn records(t: &Test) -> Vec<Value> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(t.path("usage")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        out.extend(
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_write_costed_records_and_a_daily_cap_stops_the_next_call() {
    let t = Test::init();
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(
        t.path("config.toml"),
        format!(
            "{config}\n[models.\"openai/fake-model\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n"
        ),
    )
    .unwrap();
    let fake = FakeProvider::start(vec![
        Step::text("Hello there."),
        Step::text("Hello again."),
        Step::text("Never sent."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake-model"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    for message in ["hi", "hi again"] {
        let out = t.run_env(&["agent", "-m", message], &env);
        assert_eq!(out.status, 0, "{}", out.stderr);
    }
    let written = records(&t);
    assert_eq!(written.len(), 2);
    for r in &written {
        assert_eq!(r["agent"], "main");
        assert_eq!(r["sessionKey"], "agent:main:main");
        assert_eq!(r["model"], "openai/fake-model");
        assert_eq!(r["inputTokens"], 100);
        assert!(
            r.get("estimated").is_none(),
            "the provider reported usage: {r}"
        );
        let output = r["outputTokens"].as_f64().unwrap();
        let cost = r["costUsd"].as_f64().unwrap();
        assert!((cost - (100.0 + 2.0 * output) / 1e6).abs() < 1e-12, "{r}");
    }
    let summed = t.run(&["usage", "--by", "model", "--json"]);
    assert_eq!(summed.status, 0, "{}", summed.stderr);
    let summed = summed.json();
    let row = &summed["rows"][0];
    assert_eq!(row["key"], "openai/fake-model");
    assert_eq!(row["calls"], 2);
    let tokens: u64 = written
        .iter()
        .map(|r| r["inputTokens"].as_u64().unwrap() + r["outputTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(row["tokens"], tokens);
    assert_eq!(summed["total"]["tokens"], tokens);

    // Today's tokens are at the cap: the next call is refused before it is sent.
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(
        t.path("config.toml"),
        format!("{config}\n[budgets]\ndaily_tokens = {tokens}\n"),
    )
    .unwrap();
    let out = t.run_env(&["agent", "-m", "one more"], &env);
    assert_ne!(out.status, 0);
    assert!(
        out.stderr.contains(&format!(
            "BudgetExceeded: budgets.daily_tokens is {tokens} tokens"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(fake.requests().len(), 2, "the third call was never sent");
    assert_eq!(records(&t).len(), 2);
    let out = t.run(&["usage", "--since", "yesterday"]);
    assert_eq!(out.status, 2, "{}", out.stderr);
}
