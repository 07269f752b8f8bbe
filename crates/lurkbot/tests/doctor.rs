//! `lurkbot doctor`: every check passing against the scripted model, then each problem found
//! with its fix: open permissions on config.toml and .env files, no model, a model that does not
//! answer, an unsafe gateway, a bad origin, a broken config, no home.

use std::os::unix::fs::PermissionsExt;

use lurkbot_llm::fake::{FakeProvider, Step};

use crate::util::Test;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_and_fixes() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("OK")]).await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake"),
        ("OPENAI_BASE_URL", base.as_str()),
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
        out.stdout.contains("FAIL model") && out.stdout.contains("LURKBOT_MODEL"),
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
