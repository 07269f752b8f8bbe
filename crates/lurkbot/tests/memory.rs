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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_embedder_makes_search_hybrid_and_its_failure_keyword_only() {
    let t = Test::init();
    let fake = FakeProvider::start(Vec::new()).await;
    std::fs::write(
        t.path("workspace/MEMORY.md"),
        "The boat is moored at pier nine.\nThe bike lock code is 4412.\n",
    )
    .unwrap();
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let with = |url: &str| {
        format!(
            "{config}\n[memory]\nembedder = \"openai\"\nmodel = \"embed-small\"\nbase_url = \"{url}\"\n"
        )
    };
    std::fs::write(t.path("config.toml"), with(&format!("{}/v1", fake.url))).unwrap();
    let env = [("MEMORY_EMBEDDINGS_API_KEY", "sk-mem-test")];
    let out = t.run_env(&["memory", "index", "--json"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["embedder"], "openai:embed-small");
    assert_eq!(report["embedded"], 1);
    let out = t.run_env(&["memory", "search", "boat pier", "--json"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.json()[0]["path"], "MEMORY.md");
    let requests = fake.requests();
    assert_eq!(
        requests.len(),
        2,
        "the chunk once, then the query; the chunk was cached"
    );
    assert_eq!(requests[1].body["input"], json!(["boat pier"]));
    assert!(
        requests
            .iter()
            .all(|r| r.key.as_deref() == Some("sk-mem-test"))
    );
    assert!(!out.stdout.contains("sk-mem-test") && !out.stderr.contains("sk-mem-test"));

    // The embeddings server gone: the search still answers, by keyword, and says why.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    std::fs::write(
        t.path("config.toml"),
        with(&format!("http://127.0.0.1:{port}/v1")),
    )
    .unwrap();
    let out = t.run_env(&["memory", "search", "bike lock", "--json"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.json()[0]["path"], "MEMORY.md");
    assert!(out.stderr.contains("keyword search only"), "{}", out.stderr);
    // A new note cannot be embedded: `memory index` says so (exit 1), its keyword index is kept.
    std::fs::create_dir_all(t.path("workspace/memory")).unwrap();
    std::fs::write(
        t.path("workspace/memory/kayak.md"),
        "The kayak paddle is in the loft.\n",
    )
    .unwrap();
    let out = t.run_env(&["memory", "index"], &env);
    assert_eq!(out.status, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        out.stderr
    );
}

#[cfg(feature = "local-embeddings")]
#[test]
fn the_local_embedder_finds_by_meaning_from_the_cli() {
    let model = std::env::var("LURKBOT_EMBEDDING_MODEL").expect(
        "LURKBOT_EMBEDDING_MODEL is not set: scripts/test.sh fetches all-MiniLM-L6-v2 and sets it",
    );
    let t = Test::init();
    std::fs::create_dir_all(t.path("workspace/memory")).unwrap();
    std::fs::write(
        t.path("workspace/memory/car.md"),
        "My automobile is a 2019 Subaru Outback; it goes to the garage every spring for servicing.\n",
    )
    .unwrap();
    std::fs::write(
        t.path("workspace/memory/cake.md"),
        "Lemon cake: three eggs, sugar, the zest of two lemons.\n",
    )
    .unwrap();
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(
        t.path("config.toml"),
        format!("{config}\n[memory]\nembedder = \"local\"\nlocal_model_dir = \"{model}\"\n"),
    )
    .unwrap();
    let out = t.run(&["memory", "search", "vehicle maintenance", "--json"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let hits = out.json();
    assert_eq!(hits[0]["path"], "memory/car.md", "{hits}");
    assert_eq!(
        hits.as_array().unwrap().len(),
        1,
        "the cake is below the minimum score"
    );
}
