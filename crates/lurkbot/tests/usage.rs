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

fn with_model(fake: &FakeProvider) -> Vec<(&'static str, String)> {
    vec![
        ("LURKBOT_MODEL", "openai/fake-model".to_string()),
        ("OPENAI_BASE_URL", format!("{}/v1", fake.url)),
    ]
}

fn env_of<'a>(pairs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_job_over_its_budget_records_budget_exceeded_and_keeps_its_schedule() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("never sent")]).await;
    let pairs = with_model(&fake);
    let env = env_of(&pairs);
    let out = t.run(&[
        "cron",
        "add",
        "--name",
        "digest",
        "--every",
        "1h",
        "--message",
        "Summarise the feeds",
        "--budget-tokens",
        "10",
        "--json",
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let job = out.json();
    assert_eq!(job["payload"]["budgetTokens"], 10);
    let id = job["id"].as_str().unwrap().to_string();
    let out = t.run_env(&["cron", "run", &id, "--force"], &env);
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("BudgetExceeded"), "{}", out.stderr);
    assert!(fake.requests().is_empty(), "nothing was sent");
    let runs = t.run(&["cron", "runs", &id, "--json"]).json();
    assert_eq!(runs[0]["status"], "error");
    assert!(
        runs[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("BudgetExceeded"),
        "{runs}"
    );
    let listed = t.run(&["cron", "list", "--json"]).json();
    let job = &listed[0];
    assert_eq!(job["enabled"], true);
    assert_eq!(job["state"]["consecutiveErrors"], 0, "{job}");
    let next = job["state"]["nextRunAtMs"].as_u64().unwrap();
    let last = job["state"]["lastRunAtMs"].as_u64().unwrap();
    assert!(
        next >= last + 3_500_000,
        "the hourly schedule, not a retry: {job}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heartbeat_stops_at_its_daily_budget() {
    let t = Test::init();
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(
        t.path("config.toml"),
        config
            .replacen("[heartbeat]\n", "[heartbeat]\nbudget_tokens = 5000\n", 1)
            .replacen("[agent]\n", "[agent]\ntimezone = \"UTC\"\n", 1),
    )
    .unwrap();
    std::fs::write(t.path("workspace/HEARTBEAT.md"), "- Check the disk.\n").unwrap();
    // The heartbeat already used 4,500 tokens today; its prompt alone is more than 500.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    std::fs::create_dir_all(t.path("usage")).unwrap();
    let record = serde_json::json!({"ts": now, "agent": "main", "sessionKey": "cron:heartbeat",
        "model": "openai/fake-model", "inputTokens": 4400, "outputTokens": 100});
    std::fs::write(
        t.path(&format!("usage/{}.jsonl", chrono_month(now))),
        format!("{record}\n"),
    )
    .unwrap();
    let fake = FakeProvider::start(vec![Step::text("HEARTBEAT_OK")]).await;
    let pairs = with_model(&fake);
    let out = t.run_env(&["heartbeat", "run", "--json"], &env_of(&pairs));
    assert_eq!(out.status, 1, "{}", out.stdout);
    let event = out.json();
    assert_eq!(event["status"], "failed");
    assert!(
        event["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("heartbeat.budget_tokens is 5000 tokens and 4500 tokens today"),
        "{event}"
    );
    assert!(fake.requests().is_empty());
    // Yesterday's use does not count: the same record a day earlier lets it run.
    let yesterday = serde_json::json!({"ts": now - 86_400_000, "agent": "main",
        "sessionKey": "cron:heartbeat", "model": "openai/fake-model", "inputTokens": 4400,
        "outputTokens": 100});
    std::fs::remove_dir_all(t.path("usage")).unwrap();
    std::fs::create_dir_all(t.path("usage")).unwrap();
    let month = chrono_month(now - 86_400_000);
    std::fs::write(
        t.path(&format!("usage/{month}.jsonl")),
        format!("{yesterday}\n"),
    )
    .unwrap();
    let out = t.run_env(&["heartbeat", "run", "--json"], &env_of(&pairs));
    assert_eq!(out.json()["status"], "ok-token", "{}", out.stdout);
}

/// `YYYY-MM` of `ms` in UTC (the test sets `agent.timezone = "UTC"`).
fn chrono_month(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .format("%Y-%m")
        .to_string()
}

/// ARCHITECTURE.md §9's prompt cost: the first request of a "hello" turn with the default tools
/// is at most 3,000 tokens, counted as characters / 4 of the system prompt, the messages and
/// the tools' names, descriptions and schemas (OpenClaw sends 18,355; Hermes 13,900–16,000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_turn_costs_at_most_3000_prompt_tokens() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("Hello!")]).await;
    let pairs = with_model(&fake);
    let out = t.run_env(&["agent", "-m", "hello"], &env_of(&pairs));
    assert_eq!(out.status, 0, "{}", out.stderr);
    // Measured on the wire: the messages and tools as the provider received them, compact
    // JSON, characters / 4.
    let body = &fake.requests()[0].body;
    // The `gateway` tool is offered only in a gateway's sessions.
    assert!(
        !body["tools"].to_string().contains("\"gateway\""),
        "the CLI offered the gateway tool"
    );
    let chars =
        body["messages"].to_string().chars().count() + body["tools"].to_string().chars().count();
    let tokens = chars.div_ceil(4);
    eprintln!("hello turn: {tokens} prompt tokens");
    assert!(
        tokens <= 3_000,
        "the hello prompt is {tokens} tokens, over the 3,000 budget"
    );

    // `lurkbot doctor` estimates the same request without sending it, from the tool specs
    // before the wire format wraps them: within a few dozen tokens.
    let out = t.run_env(&["doctor", "--json"], &env_of(&pairs));
    let prompt = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|c| c["check"] == "prompt")
        .expect("a prompt check");
    let detail = prompt["detail"].as_str().unwrap();
    let estimated: usize = detail
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap();
    assert!(
        estimated.abs_diff(tokens) <= 60,
        "doctor says {estimated}, the request was {tokens}: {detail}"
    );

    // `sessions show` gives the session's tokens so far and its share of the context window.
    let shown = t.run(&["sessions", "show", "agent:main:main", "--json"]);
    assert_eq!(shown.status, 0, "{}", shown.stderr);
    let shown = shown.json();
    assert_eq!(shown["turns"], 1);
    assert_eq!(shown["inputTokens"], 100);
    let context = shown["contextTokens"].as_f64().unwrap();
    let window = shown["contextWindow"].as_f64().unwrap();
    assert!(
        context > 0.0 && context < 100.0,
        "hello and Hello!: {shown}"
    );
    assert!((shown["contextShare"].as_f64().unwrap() - context / window).abs() < 1e-12);
    let missing = t.run(&["sessions", "show", "agent:main:dm:cli:nobody"]);
    assert_eq!(missing.status, 1);
    assert!(
        missing.stderr.contains("sessions list"),
        "{}",
        missing.stderr
    );
}
