//! The executor end to end: envelope, exit codes, help forms, timeouts, caps, redaction, audit.

use lurkbot_core::SessionKey;
use lurkbot_term::ExecRequest;

use crate::fixtures::Harness;

#[tokio::test]
async fn success_envelope_and_audit_record() {
    let h = Harness::new();
    let env = h.run("echo hello").await;
    assert_eq!((env.exit_code, env.stdout.as_str()), (0, "hello"));
    assert_eq!(env.result["ok"], true);
    assert_eq!(env.result["command"], "echo");
    assert_eq!(env.argv, ["echo", "hello"]);
    assert!(env.error_code.is_none() && env.error_message.is_none());
    let audit = h.audit(&env);
    for key in [
        "run_id",
        "timestamp_ms",
        "session",
        "command",
        "argv",
        "exit_code",
        "duration_ms",
        "stdout",
        "stderr",
        "error_code",
        "error_message",
        "result",
        "artifacts",
    ] {
        assert!(audit.get(key).is_some(), "audit lacks {key}: {audit}");
    }
    assert_eq!(audit["session"], "agent:main:main");
    assert_eq!(audit["command"], "echo hello");
}

#[tokio::test]
async fn every_parse_refusal_is_invalid_command_exit_2_and_audited() {
    let h = Harness::new();
    let long = format!("echo {}", "a".repeat(4092));
    let many = vec!["echo"; 65].join(" ");
    let mut cases = vec![
        "echo a\nb".to_string(),
        "echo a\r".into(),
        long,
        many,
        "echo \"open".into(),
        "echo 'open".into(),
        "echo trailing\\".into(),
        "".into(),
    ];
    for t in lurkbot_term::BANNED_TOKENS {
        cases.push(format!("echo a{t}b"));
        cases.push(format!("echo \"a {t} b\""));
        cases.push(format!("echo 'a {t} b'"));
    }
    for raw in &cases {
        let env = h.run(raw).await;
        assert_eq!(env.exit_code, 2, "{raw:?}");
        assert_eq!(env.error_code.as_deref(), Some("InvalidCommand"), "{raw:?}");
        assert_eq!(env.result["ok"], false);
        assert_eq!(env.result["error_code"], "InvalidCommand");
        assert!(!env.stderr.is_empty());
        assert_eq!(h.audit(&env)["exit_code"], 2);
    }
    assert_eq!(
        h.run(&format!("echo {}", "a".repeat(4091))).await.exit_code,
        0
    );
}

#[tokio::test]
async fn unknown_command_is_127() {
    let h = Harness::new();
    let env = h.run("ech hi").await;
    assert_eq!(
        (env.exit_code, env.error_code.as_deref()),
        (127, Some("UnknownCommand"))
    );
    assert!(env.stderr.contains("did you mean 'echo'"), "{}", env.stderr);
    assert_eq!(
        h.run("ECHO hi").await.exit_code,
        0,
        "command names are case-insensitive"
    );
}

#[tokio::test]
async fn sensitive_flags_are_refused_and_never_logged() {
    let h = Harness::new();
    for raw in [
        "echo --password pw-AAAA1",
        "echo --token=pw-AAAA2",
        "archive list --API-KEY pw-AAAA3",
        "echo x --secret 'pw-AAAA4 b'",
    ] {
        let env = h.run(raw).await;
        assert_eq!(
            (env.exit_code, env.error_code.as_deref()),
            (2, Some("SensitiveArgv")),
            "{raw}"
        );
        let text = serde_json::to_string(&env).unwrap();
        assert!(!text.contains("pw-AAAA"), "{text}");
    }
    // refused for another reason, still masked
    let env = h.run("echo --password pw-AAAA5; rm").await;
    assert_eq!(env.error_code.as_deref(), Some("InvalidCommand"));
    let env = h.run("--token=pw-AAAA6 x; y").await;
    assert!(
        !serde_json::to_string(&env)
            .unwrap()
            .to_lowercase()
            .contains("pw-aaaa"),
        "{env:?}"
    );
    assert!(
        !h.all_audit_text().contains("pw-AAAA"),
        "{}",
        h.all_audit_text()
    );
}

#[tokio::test]
async fn help_forms_answer_from_the_spec_with_exit_0() {
    let h = Harness::new();
    for (raw, sub) in [
        ("archive --help", None),
        ("archive help", None),
        ("archive -h", None),
        ("archive list --help", Some("list")),
        ("archive help make", Some("make")),
        ("archive make --out x --help", Some("make")),
        ("echo --help", None),
    ] {
        let env = h.run(raw).await;
        assert_eq!(env.exit_code, 0, "{raw}: {}", env.stderr);
        let cmd = raw.split(' ').next().unwrap();
        assert_eq!(env.result["command"], format!("{cmd} help"), "{raw}");
        for key in ["usage", "subcommands", "flags", "examples"] {
            assert!(env.result.get(key).is_some(), "{raw} lacks {key}");
        }
        assert_eq!(
            env.result.get("subcommand").and_then(|v| v.as_str()),
            sub,
            "{raw}"
        );
    }
    let env = h.run("archive help make").await;
    assert_eq!(env.result["flags"][0]["name"], "--out <path>");
    assert_eq!(env.result["flags"][0]["required"], true);
    let env = h.run("archive --help").await;
    assert_eq!(env.result["subcommands"][1]["name"], "make");
}

#[tokio::test]
async fn subcommand_and_flag_errors_are_invalid_args() {
    let h = Harness::new();
    for raw in [
        "archive",
        "archive zap",
        "archive list --nope",
        "archive make",
    ] {
        let env = h.run(raw).await;
        assert_eq!(
            (env.exit_code, env.error_code.as_deref()),
            (2, Some("InvalidArgs")),
            "{raw}"
        );
        assert!(
            env.stderr.contains("usage") || env.stderr.contains("--help"),
            "{raw}: {}",
            env.stderr
        );
    }
    let env = h.run("archive list --nope").await;
    assert_eq!(env.result["command"], "archive list");
}

#[tokio::test]
async fn timeout_cancels_with_124() {
    let h = Harness::new();
    let mut req = ExecRequest::new("slow");
    req.timeout_ms = Some(50);
    let started = std::time::Instant::now();
    let env = h.run_req(req).await;
    assert!(started.elapsed().as_secs() < 5);
    assert_eq!(
        (env.exit_code, env.error_code.as_deref()),
        (124, Some("Timeout"))
    );
    assert_eq!(env.result["timeout_ms"], 50);
}

#[tokio::test]
async fn stdout_is_capped_visibly() {
    let h = Harness::new();
    let env = h.run("archive list --big").await;
    assert_eq!(env.exit_code, 0);
    assert!(env.stdout.chars().count() <= lurkbot_term::STDOUT_CAP);
    assert!(env.stdout.contains("…[truncated "), "cut must be marked");
}

#[tokio::test]
async fn stdin_reaches_the_command_but_never_the_audit_log() {
    let h = Harness::new();
    let mut req = ExecRequest::new("echo --stdin");
    req.stdin = Some("STDIN-MARKER-7f3a".into());
    req.session = SessionKey::parse("agent:main:dm:irc:bob").unwrap();
    let env = h.run_req(req).await;
    assert_eq!(env.stdout, "STDIN-MARKER-7f3a", "the command saw stdin");
    let audit = h.audit(&env);
    assert_eq!(audit["session"], "agent:main:dm:irc:bob");
    // stdout is audited as returned; the audit has no stdin field of its own.
    assert!(audit.get("stdin").is_none());
    let mut req = ExecRequest::new("echo quiet");
    req.stdin = Some("SECOND-STDIN-MARKER".into());
    h.run_req(req).await;
    assert!(!h.all_audit_text().contains("SECOND-STDIN-MARKER"));
}

#[tokio::test]
async fn env_file_values_are_redacted_everywhere() {
    let h = Harness::new();
    let dir = h.home().join("skills/demo/secrets");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".env"),
        "DEMO_PASSWORD=Zq9-very-secret\nDEMO_USER=alice\n",
    )
    .unwrap();
    let env = h.run("echo Zq9-very-secret-alice").await;
    let text = serde_json::to_string(&env).unwrap();
    assert!(!text.contains("Zq9-very-secret"), "{text}");
    assert!(env.stdout.contains("***-alice"), "{}", env.stdout);
    assert!(!h.all_audit_text().contains("Zq9-very-secret"));
}

#[tokio::test]
async fn out_rules_confirm_overwrite_and_confinement() {
    let h = Harness::new();
    // confirm gate
    let env = h.run("archive make --out artifacts/a.json").await;
    assert_eq!(
        (env.exit_code, env.error_code.as_deref()),
        (2, Some("ConfirmRequired"))
    );
    assert!(!h.home().join("artifacts/a.json").exists());
    // new file, then replaced freely under artifacts/
    let env = h.run("archive make --out artifacts/a.json --confirm").await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.artifacts[0].path, "artifacts/a.json");
    assert_eq!(env.artifacts[0].mime, "application/json");
    assert_eq!(
        h.run("archive make --out artifacts/a.json --confirm")
            .await
            .exit_code,
        0
    );
    // user content elsewhere is kept unless --overwrite --confirm
    std::fs::write(h.home().join("mine.json"), "keep").unwrap();
    let env = h.run("archive make --out mine.json --confirm").await;
    assert_eq!(
        (env.exit_code, env.error_code.as_deref()),
        (2, Some("RefuseOverwrite"))
    );
    assert_eq!(
        std::fs::read_to_string(h.home().join("mine.json")).unwrap(),
        "keep"
    );
    let env = h
        .run("archive make --out mine.json --confirm --overwrite")
        .await;
    assert_eq!(env.exit_code, 0);
    assert!(
        std::fs::read_to_string(h.home().join("mine.json"))
            .unwrap()
            .contains("made")
    );
    // escapes and protected paths
    for (raw, code) in [
        ("../x.json", "PathEscapesAgentsRoot"),
        ("/tmp/x.json", "PathEscapesAgentsRoot"),
        ("C:\\x.json", "PathEscapesAgentsRoot"),
        ("config.toml", "PermissionDenied"),
        (
            "artifacts/terminal_exec/runs/forged.json",
            "PermissionDenied",
        ),
        ("skills/demo/secrets/.env", "PermissionDenied"),
    ] {
        let env = h
            .run(&format!("archive make --confirm --overwrite --out {raw}"))
            .await;
        assert_eq!(
            (env.exit_code, env.error_code.as_deref()),
            (2, Some(code)),
            "{raw}"
        );
    }
    assert!(!h.dir.path().join("x.json").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn symlink_out_of_the_home_is_refused_and_nothing_is_written_outside() {
    let h = Harness::new();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), h.home().join("escape")).unwrap();
    let env = h.run("archive make --confirm --out escape/evil.json").await;
    assert_eq!(
        (env.exit_code, env.error_code.as_deref()),
        (2, Some("PathEscapesAgentsRoot"))
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    // an in-home link into the audit log is protected too
    std::os::unix::fs::symlink(
        h.home().join("artifacts/terminal_exec"),
        h.home().join("sneaky"),
    )
    .unwrap();
    let env = h
        .run("archive make --confirm --out sneaky/runs/x.json")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("PermissionDenied"));
}

#[tokio::test]
async fn malformed_config_is_config_invalid_for_commands_that_read_it() {
    let h = Harness::new();
    assert_eq!(
        h.run("echo --config").await.stdout,
        "18789",
        "defaults without a file"
    );
    std::fs::write(h.home().join("config.toml"), "[gateway]\nport = \"high\"\n").unwrap();
    let env = h.run("echo --config").await;
    assert_eq!(
        (env.exit_code, env.error_code.as_deref()),
        (2, Some("ConfigInvalid"))
    );
    assert!(
        env.error_message
            .as_deref()
            .unwrap()
            .contains("config.toml:2:8: key 'gateway.port'"),
        "{env:?}"
    );
    assert_eq!(
        h.run("echo fine").await.exit_code,
        0,
        "commands that do not read it still run"
    );
}
