//! `lurkbot agent` and `lurkbot sessions` as a user runs them, against the scripted provider
//! over real HTTP: no model configured, a streamed reply with a tool call, JSON events, a
//! process killed mid-turn, and session management.

use std::time::{Duration, Instant};

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::{Value, json};

use crate::util::Test;

fn env(fake: &FakeProvider) -> Vec<(&'static str, String)> {
    vec![
        ("LURKBOT_MODEL", "openai/fake-model".to_string()),
        ("OPENAI_BASE_URL", format!("{}/v1", fake.url)),
    ]
}

fn run(t: &Test, args: &[&str], fake: &FakeProvider) -> crate::util::Output {
    let vars = env(fake);
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    t.run_env(args, &pairs)
}

#[test]
fn without_a_model_it_says_how_to_configure_one() {
    let t = Test::init();
    let out = t.run(&["agent", "-m", "hello"]);
    assert_eq!(out.status, 2);
    assert!(
        out.stderr
            .contains("no model is configured. Run `lurkbot setup`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("agent.model openai/gpt-4o-mini"),
        "{}",
        out.stderr
    );
    let out = t.run(&["exec", "help"]);
    assert_eq!(out.status, 0, "the rest keeps working");
    let out = t.run_env(&["agent", "-m", "x"], &[("LURKBOT_MODEL", "gpt-4o")]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("<provider>/<model>"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_text_and_shows_tool_calls() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::call("c1", "terminal_exec", json!({"command": "help"})),
        Step::text("Here are your commands."),
        Step::call("c2", "read", json!({"path": "workspace/AGENTS.md"})),
        Step::text("Read it."),
    ])
    .await;
    let out = run(&t, &["agent", "-m", "what can you do?"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Here are your commands.\n");
    assert!(
        out.stderr
            .contains("→ terminal_exec {\"command\":\"help\"}"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("← terminal_exec ok"), "{}", out.stderr);

    let out = run(&t, &["agent", "--json", "-m", "read AGENTS.md"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool_start", "tool_end", "text", "text", "done"]);
    assert_eq!(events[0]["name"], "read");
    assert_eq!(events[4]["model"], "openai/fake-model");
    assert_eq!(events[4]["steps"], 2);
    // The whole reply is in the final event, as `openclaw agent --json` gives it.
    assert_eq!(events[4]["text"], "Read it.");
    assert_eq!(events[4]["payloads"][0]["text"], "Read it.");
    // Same session: the second request carried the first turn.
    let last = &fake.requests()[3].body;
    assert!(last.to_string().contains("what can you do?"));

    let out = t.run(&["sessions", "list", "--json"]);
    let all: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(all[0]["key"], "agent:main:main");
    assert_eq!(all[0]["turns"], 2);
    // No sessions: an empty list of the same shape.
    let empty = Test::init().run(&["sessions", "list", "--json"]);
    assert_eq!(empty.stdout.trim(), "[]");
    let out = t.run(&["sessions", "history"]);
    assert!(
        out.stdout.contains("[user] what can you do?"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("[assistant] → terminal_exec"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("[assistant] Read it."),
        "{}",
        out.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_error_exits_1_with_the_reason() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::Error {
        status: 400,
        message: "unknown model fake-model".into(),
    }])
    .await;
    let out = run(&t, &["agent", "-m", "hi"], &fake);
    assert_eq!(out.status, 1);
    assert!(
        out.stderr.contains("unknown model fake-model"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_process_mid_turn_loses_only_the_step_in_flight() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::call(
            "c1",
            "write",
            json!({"path": "workspace/todo.md", "content": "call mum"}),
        ),
        Step::Stall("I am wri".into()),
    ])
    .await;
    let vars = env(&fake);
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut child = t
        .command(&["agent", "-m", "note: call mum"], &pairs)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the second step never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    child.kill().unwrap();
    child.wait().unwrap();

    // The first step (the call and its result) is on disk; the stalled step is not.
    assert_eq!(
        std::fs::read_to_string(t.path("workspace/todo.md")).unwrap(),
        "call mum"
    );
    let out = t.run(&["sessions", "history", "--json"]);
    let entries: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let roles: Vec<&str> = entries
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);

    // The next turn works on the same session.
    fake.push(vec![Step::text("Noted.")]);
    let out = run(&t, &["agent", "-m", "done?"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Noted.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_reset_and_delete() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("one"), Step::text("two")]).await;
    run(
        &t,
        &[
            "agent",
            "--session",
            "agent:main:dm:cli:me",
            "-m",
            "zebra-first",
        ],
        &fake,
    );
    let out = t.run(&["sessions", "reset", "agent:main:dm:cli:me"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    run(
        &t,
        &["agent", "--session", "agent:main:dm:cli:me", "-m", "second"],
        &fake,
    );
    let second = fake.requests()[1].body.to_string();
    assert!(
        !second.contains("zebra-first"),
        "a reset session starts empty"
    );
    assert!(fake.requests()[0].body.to_string().contains("zebra-first"));
    let out = t.run(&["sessions", "list"]);
    assert!(
        out.stdout.contains("agent:main:dm:cli:me"),
        "{}",
        out.stdout
    );
    assert_eq!(
        t.run(&["sessions", "delete", "agent:main:dm:cli:me"])
            .status,
        0
    );
    let out = t.run(&["sessions", "delete", "agent:main:dm:cli:me"]);
    assert_eq!(out.status, 1);
    assert!(
        t.run(&["sessions", "list"])
            .stdout
            .starts_with("0 session(s)")
    );
    assert_eq!(t.run(&["sessions", "history", "nonsense key"]).status, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_turn_and_records_it() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::call("c1", "terminal_exec", json!({"command": "help"})),
        Step::Stall("Thinking ab".into()),
        Step::text("fresh start"),
    ])
    .await;
    let vars = env(&fake);
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let child = t
        .command(&["agent", "--json", "-m", "long task"], &pairs)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the second step never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().last().unwrap().contains("\"cancelled\""),
        "{stdout}"
    );
    let history = t.run(&["sessions", "history"]).stdout;
    assert!(
        history.contains("[the user cancelled this turn]"),
        "{history}"
    );
    // The next turn works on the same session.
    let out = run(&t, &["agent", "-m", "again"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "fresh start\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_text_cannot_drive_the_terminal() {
    let t = Test::init();
    // An OSC 52 clipboard write, a screen clear and a bare CR that would overwrite the line.
    let hostile = "ok\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2J\rfaked";
    let fake = FakeProvider::start(vec![Step::text(hostile)]).await;
    let out = run(&t, &["agent", "-m", "hi"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        !out.stdout.contains('\u{1b}') && !out.stdout.contains('\r'),
        "{:?}",
        out.stdout
    );
    assert!(out.stdout.contains("ok") && out.stdout.contains("faked"));
    // --json keeps the text as it came (JSON escapes it).
    let fake = FakeProvider::start(vec![Step::text(hostile)]).await;
    let out = run(&t, &["agent", "--json", "-m", "hi"], &fake);
    assert!(out.stdout.contains("\\u001b]52"), "{}", out.stdout);
}
