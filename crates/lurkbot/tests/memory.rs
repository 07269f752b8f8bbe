//! `lurkbot memory index|search` on a home's memory files, and the memory tools in a turn
//! (offered to the owner's sessions, never to a group).

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::json;

use crate::util::Test;

#[test]
fn index_and_search_from_the_cli() {
    let t = Test::init();
    std::fs::write(
        t.path("workspace/MEMORY.md"),
        "# Memory\nThe wifi password hint: the cat's birthday.\n",
    )
    .unwrap();
    std::fs::create_dir_all(t.path("workspace/memory")).unwrap();
    std::fs::write(
        t.path("workspace/memory/2026-11-24.md"),
        "Met Dana about the garden shed.\nInvoice INV-2291 is due Friday.\n",
    )
    .unwrap();
    let out = t.run(&["memory", "index", "--json"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["files"], 2);
    assert_eq!(report["added"], 2);
    assert_eq!(report["embedder"], "none");
    let again = t.run(&["memory", "index", "--json"]).json();
    assert_eq!(
        (again["added"].clone(), again["updated"].clone()),
        (json!(0), json!(0))
    );

    let out = t.run(&["memory", "search", "INV-2291", "--json"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let hits = out.json();
    assert_eq!(hits[0]["path"], "memory/2026-11-24.md");
    assert_eq!(hits[0]["startLine"], 1);
    assert_eq!(hits[0]["endLine"], 2);
    assert!(hits[0]["snippet"].as_str().unwrap().contains("INV-2291"));
    let out = t.run(&["memory", "search", "shed"]);
    assert!(
        out.stdout
            .starts_with("1 result(s)\nmemory/2026-11-24.md:1-2"),
        "{}",
        out.stdout
    );
    let out = t.run(&["memory", "search", "x", "--min-score", "2"]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("between 0 and 1"), "{}", out.stderr);
    let out = t.run(&["memory", "index", "--rebuild", "--json"]);
    assert_eq!(out.json()["added"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_tools_in_a_turn_and_never_in_a_group() {
    let t = Test::init();
    std::fs::write(t.path("workspace/MEMORY.md"), "Alice prefers green tea.\n").unwrap();
    let fake = FakeProvider::start(vec![
        Step::calls(&[
            (
                "c1",
                "memory_search",
                json!({"query": "what tea does Alice like"}),
            ),
            (
                "c2",
                "memory_get",
                json!({"path": "MEMORY.md", "from": 1, "lines": 5}),
            ),
            ("c3", "memory_get", json!({"path": "config.toml"})),
            ("c4", "memory_get", json!({"path": "MEMORY.md", "from": 40})),
        ]),
        Step::text("Green tea."),
        Step::text("I cannot look that up here."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake-model"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    let out = t.run_env(&["agent", "-m", "What tea does Alice like?"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let results = fake.requests()[1].body.to_string();
    assert!(results.contains(r#"\"path\":\"MEMORY.md\""#), "{results}");
    assert!(results.contains("1: Alice prefers green tea."), "{results}");
    assert!(results.contains("is not a memory file"), "{results}");
    assert!(results.contains("MEMORY.md has 1 lines"), "{results}");

    let out = t.run_env(
        &[
            "agent",
            "--session",
            "agent:main:group:irc:#lurk",
            "-m",
            "What does Alice like?",
        ],
        &env,
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    let offered = fake.requests()[2].body["tools"].to_string();
    assert!(
        !offered.contains("memory_search") && !offered.contains("memory_get"),
        "{offered}"
    );
    let system = fake.requests()[2].body["messages"][0]["content"].to_string();
    assert!(
        !system.contains("Alice prefers"),
        "no MEMORY.md in a group's prompt"
    );
}
