//! `rss add|list|remove`: the subscription file, its rules and its refusals.

use serde_json::{Value, json};

use crate::fixtures::Harness;

fn subscriptions(h: &Harness) -> Value {
    serde_json::from_slice(&std::fs::read(h.path("workspace/rss/subscriptions.json")).unwrap())
        .unwrap()
}

#[tokio::test]
async fn add_list_update_and_remove() {
    let h = Harness::lan();
    let env = h
        .run("rss add --name wapo-politics --url https://www.washingtonpost.com/arcio/rss/category/politics/")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["command"], "rss add");
    assert_eq!(env.result["name"], "wapo-politics");
    assert_eq!(
        env.result["url"],
        "https://www.washingtonpost.com/arcio/rss/category/politics/"
    );
    assert_eq!(env.result["created"], true);
    let created_at = env.result["created_at_ms"].as_u64().unwrap();
    h.run("rss add --name rust-blog --url https://blog.rust-lang.org/feed.xml")
        .await;

    let subs = subscriptions(&h);
    assert_eq!(subs.as_array().unwrap().len(), 2);
    assert_eq!(subs[0]["name"], "wapo-politics");
    for key in ["name", "url", "created_at_ms", "updated_at_ms"] {
        assert!(subs[0].get(key).is_some(), "{key}");
    }

    // Adding an existing name replaces its URL and moves updated_at_ms only.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let env = h
        .run("rss add --name wapo-politics --url https://feeds.example.com/politics.xml")
        .await;
    assert_eq!(env.result["created"], false);
    assert_eq!(
        env.result["previous_url"],
        "https://www.washingtonpost.com/arcio/rss/category/politics/"
    );
    assert!(env.stdout.contains("Updated"));
    let subs = subscriptions(&h);
    assert_eq!(subs.as_array().unwrap().len(), 2);
    assert_eq!(subs[0]["url"], "https://feeds.example.com/politics.xml");
    assert_eq!(subs[0]["created_at_ms"].as_u64().unwrap(), created_at);
    assert!(subs[0]["updated_at_ms"].as_u64().unwrap() > created_at);

    let env = h.run("rss list").await;
    assert_eq!(env.exit_code, 0);
    assert_eq!(env.result["count_total"], 2);
    assert_eq!(env.result["truncated"], false);
    assert_eq!(
        env.result["items"][1],
        json!({
            "name": "rust-blog",
            "url": "https://blog.rust-lang.org/feed.xml",
            "updated_at_ms": subs[1]["updated_at_ms"],
        })
    );
    assert!(
        env.stdout
            .contains("rust-blog  https://blog.rust-lang.org/feed.xml  (never fetched)")
    );

    let env = h
        .run("rss list --max 1 --out artifacts/rss/subscriptions.json")
        .await;
    assert_eq!(env.result["count_emitted"], 1);
    assert_eq!(env.result["truncated"], true);
    assert_eq!(env.result["out"], "artifacts/rss/subscriptions.json");
    assert_eq!(env.artifacts[0].path, "artifacts/rss/subscriptions.json");
    let full: Value =
        serde_json::from_slice(&std::fs::read(h.path("artifacts/rss/subscriptions.json")).unwrap())
            .unwrap();
    assert_eq!(full.as_array().unwrap().len(), 2);
    assert_eq!(full[1]["created_at_ms"], subs[1]["created_at_ms"]);
    assert_eq!(full[1]["fetch_state"], Value::Null);

    let env = h.run("rss remove --name wapo-politics").await;
    assert_eq!(env.exit_code, 0);
    assert_eq!(env.result["command"], "rss remove");
    assert_eq!(env.result["name"], "wapo-politics");
    assert_eq!(subscriptions(&h).as_array().unwrap().len(), 1);

    let env = h.run("rss remove --name wapo-politics").await;
    assert_eq!(env.error_code.as_deref(), Some("NotFound"));
    assert_eq!(env.exit_code, 1);
    assert!(env.stderr.contains("rss list"));
}

#[tokio::test]
async fn bad_names_and_urls_are_refused_and_change_nothing() {
    let h = Harness::lan();
    h.run("rss add --name keep --url https://example.com/feed")
        .await;
    let before = std::fs::read(h.path("workspace/rss/subscriptions.json")).unwrap();
    for (command, code) in [
        ("rss add --name Upper --url https://e.com/f", "InvalidArgs"),
        ("rss add --name a_b --url https://e.com/f", "InvalidArgs"),
        ("rss add --name ../x --url https://e.com/f", "InvalidArgs"),
        ("rss add --name -x --url https://e.com/f", "InvalidArgs"),
        ("rss add --name ok --url file:///etc/passwd", "InvalidArgs"),
        ("rss add --name ok --url ftp://e.com/f", "InvalidArgs"),
        ("rss add --name ok --url not-a-url", "InvalidArgs"),
        (
            "rss add --name ok --url https://user:pw@e.com/f",
            "SensitiveArgv",
        ),
        ("rss add --name ok", "InvalidArgs"),
        ("rss add --url https://e.com/f", "InvalidArgs"),
        ("rss remove --name Nope", "InvalidArgs"),
        ("rss list --max many", "InvalidArgs"),
        ("rss list --out ../x.json", "PathEscapesAgentsRoot"),
        ("rss frobnicate", "InvalidArgs"),
    ] {
        let env = h.run(command).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some(code),
            "{command}: {}",
            env.stderr
        );
        assert_eq!(env.exit_code, 2, "{command}");
        assert!(!env.stderr.is_empty(), "{command}");
    }
    assert_eq!(
        std::fs::read(h.path("workspace/rss/subscriptions.json")).unwrap(),
        before
    );
}

#[tokio::test]
async fn url_passwords_never_reach_output_or_audit() {
    let h = Harness::lan();
    let env = h
        .run("rss add --name private --url https://me:s3cr3tpw@feeds.example.com/private.xml")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("SensitiveArgv"));
    let envelope = serde_json::to_string(&env).unwrap();
    let audit = h.all_audit_text();
    for text in [&envelope, &audit] {
        assert!(!text.contains("s3cr3tpw"), "{text}");
    }
    assert!(
        audit.contains("https://me:***@feeds.example.com/private.xml"),
        "{audit}"
    );
    assert!(!h.path("workspace/rss/subscriptions.json").exists());
}

#[tokio::test]
async fn a_damaged_state_file_is_reported_and_left_alone() {
    let h = Harness::lan();
    h.write("workspace/rss/subscriptions.json", b"[{\"name\": \"half");
    for command in [
        "rss add --name x --url https://e.com/f",
        "rss list",
        "rss remove --name x",
        "rss fetch --name x",
    ] {
        let env = h.run(command).await;
        assert_eq!(env.error_code.as_deref(), Some("ParseError"), "{command}");
        assert!(env.stderr.contains("subscriptions.json"), "{}", env.stderr);
    }
    assert_eq!(
        std::fs::read(h.path("workspace/rss/subscriptions.json")).unwrap(),
        b"[{\"name\": \"half"
    );
}

/// Runs on OS threads, each with its own runtime, so the adds really overlap.
#[test]
fn concurrent_adds_lose_nothing() {
    let h = Harness::lan();
    std::thread::scope(|scope| {
        for i in 0..24 {
            let h = &h;
            scope.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let env = rt.block_on(h.run(&format!(
                    "rss add --name feed-{i} --url https://e.com/{i}.xml"
                )));
                assert_eq!(env.exit_code, 0, "{}", env.stderr);
            });
        }
    });
    let subs = subscriptions(&h);
    assert_eq!(subs.as_array().unwrap().len(), 24);
}

#[tokio::test]
async fn help_and_bundled_skill_describe_rss() {
    let h = Harness::lan();
    let env = h.run("rss --help").await;
    assert_eq!(env.exit_code, 0);
    let subs: Vec<&str> = env.result["subcommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(subs, ["add", "list", "remove", "fetch"]);
    let env = h.run("rss help fetch").await;
    let flags = env.result["flags"].to_string();
    for flag in [
        "--name",
        "--url",
        "--max-items",
        "--out",
        "--timeout-ms",
        "--max-bytes",
        "--force",
    ] {
        assert!(flags.contains(flag), "{flag}");
    }
    let skills = lurkbot_term::bundled_skills(&lurkbot_term::default_registry());
    let (_, doc) = skills
        .iter()
        .find(|(path, _)| path == "skills/rss-cli/SKILL.md")
        .unwrap();
    assert!(doc.contains("rss fetch"));
}

#[tokio::test]
async fn a_hand_edited_unusable_url_is_refused_before_fetching() {
    let h = Harness::lan();
    h.write(
        "workspace/rss/subscriptions.json",
        br#"[{"name":"bad","url":"file:///etc/passwd","created_at_ms":1,"updated_at_ms":1}]"#,
    );
    let env = h.run("rss fetch --name bad").await;
    assert_eq!(env.error_code.as_deref(), Some("InvalidArgs"));
    assert!(
        env.stderr.contains("rss add --name bad --url"),
        "{}",
        env.stderr
    );
    assert!(!env.stdout.contains("root:"));
}
