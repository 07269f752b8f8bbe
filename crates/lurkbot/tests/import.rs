//! `lurkbot import openclaw` from a state folder OpenClaw itself made: OpenClaw 2026.9.6's CLI
//! onboards with a custom OpenAI-compatible provider (the scripted server), sets fallbacks, a
//! heartbeat, a tool deny list and WhatsApp's access settings, and adds a cron job through its own gateway (where its
//! cron jobs live in SQLite). After the import, `lurkbot agent` answers through the imported
//! model and base URL, the job is listed, and no key is in config.toml.

use std::time::{Duration, Instant};

use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_test_support::openclaw::OpenClaw;

use crate::util::Test;

const OC_TOKEN: &str = "tok-imported-0123456789abcd";

fn run_openclaw(cli: &OpenClaw, args: &[&str]) -> String {
    let out = cli.command(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "openclaw {args:?}: {text}");
    text
}

/// OpenClaw's `cron add` talks to its gateway: run one on the state folder for the call.
fn add_cron_job_with_openclaws_gateway(cli: &OpenClaw) {
    let port = lurkbot_test_support::ports::free_port().to_string();
    let url = format!("ws://127.0.0.1:{port}");
    let mut gateway = cli
        .command(&["gateway", "run", "--port", &port])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let probe = cli
            .command(&["gateway", "health", "--url", &url, "--token", OC_TOKEN])
            .output()
            .unwrap();
        if probe.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "OpenClaw's gateway did not start in 90 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let added = cli
        .command(&[
            "cron",
            "add",
            "--name",
            "Morning brief",
            "--every",
            "1h",
            "--message",
            "Summarise the news",
            "--url",
            &url,
            "--token",
            OC_TOKEN,
        ])
        .output()
        .unwrap();
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_folder_made_by_openclaw_is_imported_and_used() {
    let fake = FakeProvider::start(vec![Step::text("Hello from the imported model")]).await;
    let base = format!("{}/v1", fake.url);
    let cli = OpenClaw::new();
    let state = cli.home.path().join(".openclaw");
    let setup = tokio::task::spawn_blocking({
        let base = base.clone();
        move || {
            let cli = cli;
            run_openclaw(
                &cli,
                &[
                    "onboard",
                    "--non-interactive",
                    "--accept-risk",
                    "--mode",
                    "local",
                    "--auth-choice",
                    "custom-api-key",
                    "--custom-base-url",
                    &base,
                    "--custom-model-id",
                    "fake-model",
                    "--custom-provider-id",
                    "fake",
                    "--custom-api-key",
                    "sk-imported-key-42",
                    "--custom-compatibility",
                    "openai",
                    "--gateway-auth",
                    "token",
                    "--gateway-token",
                    OC_TOKEN,
                    "--skip-health",
                    "--no-install-daemon",
                    "--json",
                ],
            );
            run_openclaw(
                &cli,
                &[
                    "config",
                    "set",
                    "agents.defaults.model.fallbacks",
                    "[\"fake/backup-model\"]",
                    "--strict-json",
                ],
            );
            run_openclaw(
                &cli,
                &["config", "set", "agents.defaults.heartbeat.every", "45m"],
            );
            run_openclaw(
                &cli,
                &[
                    "config",
                    "set",
                    "tools.deny",
                    "[\"exec\",\"browser\"]",
                    "--strict-json",
                ],
            );
            run_openclaw(
                &cli,
                &[
                    "config",
                    "set",
                    "channels.whatsapp",
                    r#"{"dmPolicy":"allowlist","allowFrom":["+4915550001"],"groupPolicy":"allowlist","groups":{"*":{"requireMention":false},"120363025246125486@g.us":{"requireMention":true}}}"#,
                    "--strict-json",
                ],
            );
            std::fs::write(
                cli.home.path().join(".openclaw/workspace/USER.md"),
                "# USER.md\n\nName: Ada. Prefers short answers.\n",
            )
            .unwrap();
            add_cron_job_with_openclaws_gateway(&cli);
            cli
        }
    })
    .await
    .unwrap();

    let t = Test::init();
    let dir = state.display().to_string();
    let dry = t.run(&["import", "openclaw", &dir, "--dry-run"]);
    assert_eq!(dry.status, 0, "{}", dry.stderr);
    assert!(dry.stdout.contains("nothing written"), "{}", dry.stdout);
    assert!(!dry.stdout.contains("sk-imported-key-42"), "{}", dry.stdout);
    assert!(
        !std::fs::read_to_string(t.path("config.toml"))
            .unwrap()
            .contains("fake-model"),
        "a dry run writes nothing"
    );

    let out = t.run(&["import", "openclaw", &dir, "--json"]);
    assert_eq!(out.status, 0, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    assert!(!out.stdout.contains("sk-imported-key-42"), "{}", out.stdout);
    let unmapped = report["unmapped"].to_string();
    assert!(unmapped.contains("tools.deny: browser"), "{unmapped}");
    assert!(unmapped.contains("managed by OpenClaw"), "{unmapped}");

    // WhatsApp's access settings carry over; the device must be linked again.
    assert!(
        unmapped.contains("lurkbot channels login whatsapp"),
        "{unmapped}"
    );
    assert!(
        unmapped.contains("channels.whatsapp.groups (by id)"),
        "{unmapped}"
    );
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let settings: toml::Table = config.parse().unwrap();
    let whatsapp = &settings["channels"]["whatsapp"];
    assert_eq!(whatsapp["mode"].as_str(), Some("linked"), "{config}");
    assert_eq!(
        whatsapp["dm_policy"].as_str(),
        Some("allowlist"),
        "{config}"
    );
    assert_eq!(
        whatsapp["allow_from"].as_array().map(|a| a.len()),
        Some(1),
        "{config}"
    );
    assert_eq!(whatsapp["allow_from"][0].as_str(), Some("4915550001"));
    assert_eq!(
        whatsapp["require_mention"].as_bool(),
        Some(false),
        "{config}"
    );
    // The settings are valid: the channel is listed from them.
    let listed = t.run(&["channels", "list"]);
    assert_eq!(listed.status, 0, "{}{}", listed.stdout, listed.stderr);
    assert!(listed.stdout.contains("whatsapp"), "{}", listed.stdout);
    assert!(config.contains("model = \"openai/fake-model\""), "{config}");
    assert!(config.contains("\"openai/backup-model\""), "{config}");
    assert!(config.contains("every = \"45m\""), "{config}");
    assert!(
        config.contains("\"terminal_exec\""),
        "exec became terminal_exec: {config}"
    );
    assert!(
        !config.contains("sk-imported-key-42"),
        "no key in config.toml"
    );
    let env = std::fs::read_to_string(t.path(".env")).unwrap();
    assert!(
        env.contains("OPENAI_API_KEY=\"sk-imported-key-42\""),
        "{env}"
    );
    assert!(
        env.contains(&format!("OPENAI_BASE_URL=\"{base}\"")),
        "{env}"
    );
    assert!(
        std::fs::read_to_string(t.path("workspace/USER.md"))
            .unwrap()
            .contains("Name: Ada")
    );

    let jobs = t.run(&["cron", "list", "--json"]);
    assert!(jobs.stdout.contains("Morning brief"), "{}", jobs.stdout);

    // The imported model answers (its base URL and key came from .env).
    let reply = t.run(&["agent", "-m", "hello"]);
    assert_eq!(reply.status, 0, "{}", reply.stderr);
    assert!(
        reply.stdout.contains("Hello from the imported model"),
        "{}",
        reply.stdout
    );
    let request = &fake.requests()[0];
    assert_eq!(request.body["model"], "fake-model");
    assert_eq!(
        request.key.as_deref(),
        Some("sk-imported-key-42"),
        "the imported key was sent"
    );

    // A second import keeps what is there.
    let again = t.run(&["import", "openclaw", &dir]);
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert!(again.stdout.contains("kept"), "{}", again.stdout);
    drop(setup);
}

#[test]
fn an_import_from_something_that_is_not_an_openclaw_folder_is_refused() {
    let t = Test::init();
    let missing = t.path("no-such-folder").display().to_string();
    let out = t.run(&["import", "openclaw", &missing]);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("openclaw.json") && out.stderr.contains("OpenClaw state folder"),
        "{}",
        out.stderr
    );
    let dir = t.path("oc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("openclaw.json"), "{ // a comment\n}").unwrap();
    let out = t.run(&["import", "openclaw", &dir.display().to_string()]);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(out.stderr.contains("not plain JSON"), "{}", out.stderr);
    let before = std::fs::read_to_string(t.path("config.toml")).unwrap();
    assert_eq!(
        before,
        std::fs::read_to_string(t.path("config.toml")).unwrap(),
        "nothing written"
    );
}

/// A hostile state folder (ARCHITECTURE.md §7): an API key with a line break would plant
/// `LURKBOT_GATEWAY_TOKEN` in `.env` — it is refused, naming the key; a value with quotes and
/// `$` is written quoted and read back exactly; a `memory` folder that is a link out of the
/// folder and a workspace setting pointing elsewhere are not followed, so an outside private
/// key is never copied in; copies are private.
#[test]
fn a_hostile_state_folder_plants_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let t = Test::init();
    let outside = t.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("id_rsa"), "PRIVATE KEY OUTSIDE\n").unwrap();
    std::fs::set_permissions(
        outside.join("id_rsa"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let oc = t.path("oc");
    std::fs::create_dir_all(oc.join("workspace")).unwrap();
    std::fs::write(oc.join("workspace/AGENTS.md"), "Be useful.\n").unwrap();
    std::os::unix::fs::symlink(&outside, oc.join("workspace/memory")).unwrap();
    std::fs::create_dir_all(oc.join("skills/mine")).unwrap();
    std::fs::write(
        oc.join("skills/mine/SKILL.md"),
        "---\nname: mine\ndescription: d\n---\n",
    )
    .unwrap();
    std::fs::set_permissions(
        oc.join("skills/mine/SKILL.md"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let planted = "sk-real\nLURKBOT_GATEWAY_TOKEN=attacker-token-0123456789abcdef";
    let config = serde_json::json!({
        "agents": {"defaults": {"model": {"primary": "anthropic/claude-x", "fallbacks": ["openai/gpt-x"]}}},
        "models": {"providers": {
            "openai": {"apiKey": "sk-\"quoted\"-$HOME-\\x"},
            "anthropic": {"apiKey": planted}}}
    });
    std::fs::write(oc.join("openclaw.json"), config.to_string()).unwrap();
    let token_before = t.gateway_token();
    let out = t.run(&["import", "openclaw", &oc.display().to_string()]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("ANTHROPIC_API_KEY") && all.contains("control character"),
        "{all}"
    );
    assert!(
        all.contains("nothing outside the given folder is read"),
        "{all}"
    );
    assert!(!all.contains("attacker-token"), "{all}");
    let env = std::fs::read_to_string(t.path(".env")).unwrap_or_default();
    assert!(!env.contains("attacker-token"), "{env}");
    assert_eq!(
        t.gateway_token(),
        token_before,
        "the gateway token is still the owner's"
    );
    let (vars, errors) = lurkbot_core::dotenv::parse_map(&env);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(vars["OPENAI_API_KEY"], "sk-\"quoted\"-$HOME-\\x", "{env}");
    assert!(
        !t.path("workspace/memory/id_rsa").exists(),
        "an outside key was copied in"
    );
    assert!(t.path("workspace/AGENTS.md").exists());
    let skill = std::fs::metadata(t.path("skills/mine/SKILL.md")).unwrap();
    assert_eq!(skill.permissions().mode() & 0o777, 0o600);

    // A workspace setting that points out of the folder is not read either.
    let config =
        serde_json::json!({"agents": {"defaults": {"workspace": outside.display().to_string()}}});
    std::fs::write(oc.join("openclaw.json"), config.to_string()).unwrap();
    let out = t.run(&[
        "import",
        "openclaw",
        &oc.display().to_string(),
        "--overwrite",
    ]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("agents.defaults.workspace"), "{all}");
    assert!(!t.path("workspace/id_rsa").exists());
}
