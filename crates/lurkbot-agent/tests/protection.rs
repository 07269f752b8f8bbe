//! The protection model as the model's file tools meet it (ARCHITECTURE.md §4.6): links in the home,
//! secrets, state, group sessions, and secret values kept out of what reaches the model.

use lurkbot_core::SessionKey;
use serde_json::json;

use crate::common::{Setup, call_each_in, setup};

const TOKEN: &str = "gateway-token-abcdefghijklmnopqrstuvwxyz";
const KEY: &str = "sk-home-secret-0123456789";

fn plant(s: &Setup) {
    std::fs::write(s.home.join(".env"), format!("OPENAI_API_KEY={KEY}\n")).unwrap();
    std::fs::write(
        s.home.join("exec-approvals.json"),
        "{\"version\":1,\"allow\":[]}\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("..", s.home.join("workspace/homelink")).unwrap();
    }
}

async fn call(s: &Setup, tool: &str, calls: &[serde_json::Value]) -> Vec<(String, bool)> {
    let config = format!("[gateway]\ntoken = \"{TOKEN}\"\n");
    let out = call_each_in(s, &SessionKey::main(), &config, tool, calls).await;
    #[cfg(unix)]
    if !s.home.join("workspace/hardcfg").exists() {
        std::fs::hard_link(s.home.join("config.toml"), s.home.join("workspace/hardcfg")).unwrap();
    }
    out
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_do_not_open_secrets_to_read() {
    let s = setup(vec![]).await;
    plant(&s);
    // The first call writes config.toml (with the token) and makes the hard link.
    call(&s, "read", &[json!({"path": "workspace/AGENTS.md"})]).await;
    let results = call(
        &s,
        "read",
        &[
            json!({"path": "workspace/homelink/config.toml"}),
            json!({"path": "workspace/hardcfg"}),
            json!({"path": "workspace/homelink/.env"}),
            json!({"path": "workspace/AGENTS.md"}),
        ],
    )
    .await;
    for (text, _) in &results[..3] {
        assert!(text.contains("cannot be read"), "{text}");
        assert!(!text.contains(TOKEN) && !text.contains(KEY), "{text}");
    }
    assert!(results[3].0.contains("Be brief."), "{}", results[3].0);
}

/// `memory_get` asks the same protection model about the resolved target: a memory file that
/// is a link to config.toml (the gateway token) or to the home's `.env` is refused, as by `read`.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_get_follows_links_into_the_protection_model() {
    let s = setup(vec![]).await;
    plant(&s);
    call(&s, "read", &[json!({"path": "workspace/AGENTS.md"})]).await;
    std::fs::create_dir_all(s.home.join("workspace/memory")).unwrap();
    std::os::unix::fs::symlink("../../config.toml", s.home.join("workspace/memory/cfg.md"))
        .unwrap();
    std::os::unix::fs::symlink("../../.env", s.home.join("workspace/memory/env.md")).unwrap();
    std::fs::write(
        s.home.join("workspace/memory/2026-11-25.md"),
        "bought milk\n",
    )
    .unwrap();
    let results = call(
        &s,
        "memory_get",
        &[
            json!({"path": "memory/cfg.md"}),
            json!({"path": "memory/env.md"}),
            json!({"path": "memory/2026-11-25.md"}),
        ],
    )
    .await;
    for (text, _) in &results[..2] {
        assert!(text.contains("cannot be read"), "{text}");
        assert!(!text.contains(TOKEN) && !text.contains(KEY), "{text}");
    }
    assert!(results[2].0.contains("bought milk"), "{}", results[2].0);
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_do_not_open_state_or_secrets_to_writers() {
    let s = setup(vec![]).await;
    plant(&s);
    call(&s, "read", &[json!({"path": "workspace/AGENTS.md"})]).await;
    let config_before = std::fs::read(s.home.join("config.toml")).unwrap();
    let approvals_before = std::fs::read(s.home.join("exec-approvals.json")).unwrap();
    let writes = call(
        &s,
        "write",
        &[
            json!({"path": "workspace/homelink/exec-approvals.json", "content": "{\"allow\":[\"*\"]}"}),
            json!({"path": "workspace/homelink/auth/profiles.json", "content": "{}"}),
            json!({"path": "workspace/homelink/sessions/main/x.jsonl", "content": "{}"}),
            json!({"path": "workspace/homelink/artifacts/terminal_exec/runs/f.json", "content": "{}"}),
            json!({"path": "workspace/homelink/skills/x/secrets/.env", "content": "A=1"}),
            json!({"path": "workspace/homelink/cron/jobs.json", "content": "[]"}),
            json!({"path": "workspace/ok.txt", "content": "fine"}),
        ],
    )
    .await;
    for (text, _) in &writes[..6] {
        assert!(text.contains("cannot be written"), "{text}");
    }
    assert!(writes[6].0.contains("wrote 4 bytes"), "{}", writes[6].0);
    for gone in ["auth", "sessions/main/x.jsonl", "skills/x", "cron"] {
        assert!(!s.home.join(gone).exists(), "{gone} was created");
    }
    let edits = call(
        &s,
        "edit",
        &[json!({"path": "workspace/homelink/config.toml", "old_text": "token", "new_text": "t"})],
    )
    .await;
    assert!(edits[0].0.contains("cannot be"), "{}", edits[0].0);
    let patch = "*** Begin Patch\n*** Delete File: workspace/hardcfg\n*** End Patch";
    let patched = call(&s, "apply_patch", &[json!({"input": patch})]).await;
    assert!(patched[0].0.contains("cannot be"), "{}", patched[0].0);
    assert!(s.home.join("workspace/hardcfg").exists());
    assert_eq!(
        std::fs::read(s.home.join("exec-approvals.json")).unwrap(),
        approvals_before
    );
    // The tool layer rewrites config.toml per call; its token line is what must survive.
    assert_eq!(
        std::fs::read(s.home.join("config.toml")).unwrap(),
        config_before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_sessions_do_not_read_private_memory() {
    let s = setup(vec![]).await;
    std::fs::write(s.home.join("workspace/MEMORY.md"), "PRIVATE-NOTE-42\n").unwrap();
    std::fs::create_dir_all(s.home.join("workspace/memory")).unwrap();
    std::fs::write(s.home.join("workspace/memory/2026-11-01.md"), "diary\n").unwrap();
    let group = SessionKey::parse("agent:main:group:irc:lurkers").unwrap();
    let calls = [
        json!({"path": "workspace/MEMORY.md"}),
        json!({"path": "workspace/memory/2026-11-01.md"}),
        json!({"path": "workspace/AGENTS.md"}),
    ];
    let results = call_each_in(&s, &group, "", "read", &calls).await;
    assert!(results[0].0.contains("private memory"), "{}", results[0].0);
    assert!(results[1].0.contains("private memory"), "{}", results[1].0);
    assert!(!results[0].0.contains("PRIVATE-NOTE-42"));
    assert!(results[2].0.contains("Be brief."));
    let main = call_each_in(&s, &SessionKey::main(), "", "read", &calls[..1]).await;
    assert!(main[0].0.contains("PRIVATE-NOTE-42"), "{}", main[0].0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_values_never_reach_the_model() {
    let s = setup(vec![]).await;
    std::fs::write(s.home.join(".env"), format!("OPENAI_API_KEY={KEY}\n")).unwrap();
    // A copy of the key in an ordinary file, as a careless note would hold it.
    std::fs::write(
        s.home.join("workspace/notes.md"),
        format!("my key is {KEY}\n"),
    )
    .unwrap();
    let results = call_each_in(
        &s,
        &SessionKey::main(),
        "",
        "read",
        &[json!({"path": "workspace/notes.md"})],
    )
    .await;
    assert!(results[0].0.contains("my key is ***"), "{}", results[0].0);
    for request in s.fake.requests() {
        assert!(
            !request.body.to_string().contains(KEY),
            "the key reached the model"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_session_tools_see_only_their_own_session() {
    let s = setup(vec![]).await;
    // The owner's DM (main session) exists with a private message in it.
    call_each_in(&s, &SessionKey::main(), "", "session_status", &[json!({})]).await;
    let group = SessionKey::parse("agent:main:group:irc:lurkers").unwrap();
    let history = call_each_in(
        &s,
        &group,
        "",
        "sessions_history",
        &[
            json!({"session_key": "agent:main:main"}),
            json!({"session_key": group.as_str()}),
        ],
    )
    .await;
    assert!(history[0].0.contains("no session"), "{}", history[0].0);
    assert!(!history[0].0.contains("\"go\""), "{}", history[0].0);
    assert!(history[1].0.contains("\"go\""), "{}", history[1].0);
    let list = call_each_in(&s, &group, "", "sessions_list", &[json!({})]).await;
    assert!(
        list[0].0.contains("agent:main:group:irc:lurkers"),
        "{}",
        list[0].0
    );
    assert!(!list[0].0.contains("agent:main:main"), "{}", list[0].0);
    // The main session still sees both.
    let list = call_each_in(&s, &SessionKey::main(), "", "sessions_list", &[json!({})]).await;
    assert!(list[0].0.contains("agent:main:main") && list[0].0.contains("lurkers"));
}
