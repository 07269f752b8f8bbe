//! `lurkbot doctor`: every check passing against the scripted model, then each problem found
//! with its fix: open permissions on config.toml and .env files, no model, a model that does not
//! answer, an unsafe gateway, a bad origin, a broken config, no home.

use std::os::unix::fs::PermissionsExt;

use lurkbot_llm::fake::{FakeProvider, Step};

use crate::util::Test;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_and_fixes() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("OK"), Step::text("OK")]).await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("PATH", "/usr/bin:/bin"),
    ];
    let out = t.run_env(&["doctor"], &env);
    assert_eq!(out.status, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("ok   model") && out.stdout.contains("openai/fake answers"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("FAIL"));
    assert!(
        out.stdout.contains("ok   browser") && out.stdout.contains("Chromium at /"),
        "{}",
        out.stdout
    );
    // Without Chromium on PATH, doctor says how to get it.
    let bare = [
        ("LURKBOT_MODEL", "openai/fake"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("PATH", "/nonexistent"),
    ];
    let missing = t.run_env(&["doctor"], &bare);
    assert!(
        missing.stdout.contains("browser") && missing.stdout.contains("apt-get install chromium"),
        "{}",
        missing.stdout
    );
    assert!(
        out.stdout.contains("ok   prompt") && out.stdout.contains("tokens (budget 3000)"),
        "{}",
        out.stdout
    );

    // Problems: open permissions, a public bind without a token, a bad origin, a dead model.
    std::fs::set_permissions(
        t.path("config.toml"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::create_dir_all(t.path("skills/rss-cli/secrets")).unwrap();
    std::fs::write(t.path("skills/rss-cli/secrets/.env"), "X=1\n").unwrap();
    std::fs::set_permissions(
        t.path("skills/rss-cli/secrets/.env"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let config = config
        .replace("bind = \"127.0.0.1\"", "bind = \"0.0.0.0\"")
        .replace("auth = \"token\"", "auth = \"none\"")
        .replace(
            "# allowed_origins = [\"https://app.example\"]",
            "allowed_origins = [\"*\"]",
        );
    std::fs::write(t.path("config.toml"), config).unwrap();
    let dead = [
        ("LURKBOT_MODEL", "openai/fake"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
    ];
    let out = t.run_env(&["doctor", "--json"], &dead);
    assert_eq!(out.status, 1);
    let checks: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failed = |name: &str, text: &str| {
        checks
            .iter()
            .any(|c| c["check"] == name && c["status"] == "fail" && c.to_string().contains(text))
    };
    assert!(failed("permissions", "chmod 600"), "{checks:?}");
    assert!(
        failed("permissions", "skills/rss-cli/secrets/.env"),
        "{checks:?}"
    );
    assert!(failed("model", "does not answer"), "{checks:?}");
    assert!(failed("gateway.bind", "public"), "{checks:?}");
    assert!(failed("gateway.auth", "non-loopback"), "{checks:?}");
    assert!(
        failed("gateway.allowed_origins", "not an origin"),
        "{checks:?}"
    );
    assert!(checks.iter().all(|c| !c.to_string().contains("X=1")));

    // No model at all.
    let out = t.run(&["doctor"]);
    assert!(
        out.stdout.contains("FAIL model") && out.stdout.contains("run `lurkbot setup`"),
        "{}",
        out.stdout
    );
    // A model name without a provider: the reason whole, not cut at its "e.g.".
    let out = t.run_env(&["doctor"], &[("LURKBOT_MODEL", "gpt-4o")]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("FAIL model"))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("'gpt-4o'") && line.contains("openai/gpt-4o"),
        "{line}"
    );
    // An OpenAI model is not offered with Anthropic's prefix.
    assert!(!line.contains("anthropic/gpt-4o"), "{line}");
    assert!(!line.contains("(e.g —"), "{line}");
    // A broken config stops at the config check.
    std::fs::write(t.path("config.toml"), "[gateway]\nport = \"high\"\n").unwrap();
    let out = t.run(&["doctor"]);
    assert_eq!(out.status, 1);
    assert!(
        out.stdout.contains("FAIL config") && out.stdout.contains("gateway.port"),
        "{}",
        out.stdout
    );
    // No home.
    let empty = Test::new();
    let out = empty.run(&["doctor"]);
    assert_eq!(out.status, 1);
    assert!(out.stdout.contains("lurkbot init"), "{}", out.stdout);
}

/// Everything LurkBot creates in the home is private (files 0600, folders 0700), whatever
/// the parent's umask: the memory index (made by SQLite), memory files, transcripts, audit
/// records and `--out` artifacts. `doctor` names anything wider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_created_in_the_home_is_private() {
    let t = Test::init();
    // (Made by the test, whose own umask is not LurkBot's: private by hand.)
    std::fs::create_dir_all(t.path("workspace/memory")).unwrap();
    std::fs::write(t.path("workspace/memory/2026-11-25.md"), "bought milk\n").unwrap();
    for (made, mode) in [
        ("workspace/memory", 0o700),
        ("workspace/memory/2026-11-25.md", 0o600),
    ] {
        std::fs::set_permissions(t.path(made), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    assert_eq!(t.run(&["memory", "index"]).status, 0);
    assert_eq!(
        t.exec_json("zip create --src workspace/memory --out artifacts/m.zip --confirm")["exit_code"],
        0
    );
    let fake = FakeProvider::start(vec![Step::text("hello")]).await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    assert_eq!(t.run_env(&["agent", "-m", "hi"], &env).status, 0);
    let mut wide = Vec::new();
    let mut checked = 0;
    for path in crate::util::tree(&t.path("")) {
        let meta = std::fs::symlink_metadata(t.path(&path)).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        checked += 1;
        if meta.permissions().mode() & 0o077 != 0 {
            wide.push(format!("{path} {:o}", meta.permissions().mode() & 0o777));
        }
    }
    assert!(checked > 20, "{checked}");
    for made in ["memory/index.sqlite", "artifacts/m.zip", "sessions/main"] {
        assert!(t.path(made).exists(), "{made}");
    }
    assert!(wide.is_empty(), "not private: {wide:?}");
    let out = t.run(&["doctor", "--json"]);
    assert!(
        out.stdout.contains("everything in the home is private"),
        "{}",
        out.stdout
    );

    std::fs::set_permissions(
        t.path("workspace/AGENTS.md"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = t.run(&["doctor"]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("private"))
        .unwrap_or_default()
        .to_string();
    assert!(line.starts_with("warn"), "{}", out.stdout);
    assert!(line.contains("workspace/AGENTS.md (644)"), "{line}");
    assert!(out.stdout.contains("chmod -R go-rwx"), "{}", out.stdout);
}

/// An enabled channel whose credentials are not in the home's `.env` is flagged with the
/// variables to set (the gateway would refuse to start it); once they are set, it is not.
#[test]
fn an_enabled_channel_without_its_credentials_is_flagged() {
    let t = Test::init();
    let config = t.path("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "\n[channels.telegram]\nallow_from = [\"42\"]\n[channels.slack]\nenabled = false\n",
    );
    std::fs::write(&config, text).unwrap();
    // One JSON object a line.
    let checks = |out: &crate::util::Output| -> Vec<serde_json::Value> {
        out.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let out = t.run(&["doctor", "--json"]);
    let all = checks(&out);
    let flagged: Vec<&serde_json::Value> =
        all.iter().filter(|c| c["check"] == "channels").collect();
    assert_eq!(flagged.len(), 1, "{}", out.stdout);
    assert_eq!(flagged[0]["status"], "fail");
    assert!(
        flagged[0]["detail"]
            .as_str()
            .unwrap()
            .contains("[channels.telegram]")
            && flagged[0]["fix"]
                .as_str()
                .unwrap()
                .contains("TELEGRAM_BOT_TOKEN"),
        "{}",
        out.stdout
    );
    std::fs::write(t.path(".env"), "TELEGRAM_BOT_TOKEN=123:abc\n").unwrap();
    let again = t.run(&["doctor", "--json"]);
    assert!(
        !checks(&again).iter().any(|c| c["check"] == "channels"),
        "{}",
        again.stdout
    );
}
