//! `lurkbot exec`: envelope, exit codes, refusals, confinement and the audit log through the
//! real binary.

use crate::util::{Test, files_text};

#[test]
fn json_help_is_a_valid_envelope_listing_commands() {
    let t = Test::init();
    let env = t.exec_json("help");
    assert_eq!(env["exit_code"], 0);
    for key in [
        "run_id",
        "exit_code",
        "stdout",
        "stderr",
        "duration_ms",
        "error_code",
        "error_message",
        "result",
        "artifacts",
        "argv",
    ] {
        assert!(env.get(key).is_some(), "envelope lacks {key}");
    }
    let run_id = env["run_id"].as_str().unwrap();
    assert_eq!(run_id.len(), 30, "{run_id}");
    let names: Vec<&str> = env["result"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"help"), "{names:?}");
    assert_eq!(env["result"]["ok"], true);
    let audit: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path(&format!("artifacts/terminal_exec/runs/{run_id}.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(audit["command"], "help");
    assert_eq!(audit["result"], env["result"]);
}

#[test]
fn plain_mode_splits_stdout_and_stderr() {
    let t = Test::init();
    let out = t.run(&["exec", "help"]);
    assert_eq!(out.status, 0);
    assert!(out.stdout.contains("help ") && out.stderr.is_empty());
    let out = t.run(&["exec", "nosuch"]);
    assert_eq!(out.status, 127);
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("UnknownCommand") && out.stderr.contains("help"));
}

#[test]
fn works_without_init_and_creates_only_what_it_needs() {
    let t = Test::new();
    let out = t.run(&["exec", "help"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(t.path("artifacts/terminal_exec/runs").is_dir());
    assert!(!t.path("config.toml").exists());
}

#[test]
fn every_refusal_has_its_code_and_exit_status() {
    let t = Test::init();
    let long = format!("help {}", "a".repeat(4092));
    let many = format!("help{}", " x".repeat(64));
    let mut cases: Vec<(String, &str, i64)> = vec![
        ("help\nhelp".into(), "InvalidCommand", 2),
        (long, "InvalidCommand", 2),
        (many, "InvalidCommand", 2),
        ("help \"unterminated".into(), "InvalidCommand", 2),
        ("help 'unterminated".into(), "InvalidCommand", 2),
        ("help trailing\\".into(), "InvalidCommand", 2),
        ("nosuch".into(), "UnknownCommand", 127),
        ("help --password x".into(), "SensitiveArgv", 2),
        ("help --out ../x".into(), "PathEscapesAgentsRoot", 2),
        ("help --out /etc/passwd".into(), "PathEscapesAgentsRoot", 2),
        ("help --out C:\\x".into(), "PathEscapesAgentsRoot", 2),
        ("help --bogus".into(), "InvalidArgs", 2),
        ("help nosuch".into(), "NotFound", 1),
    ];
    for token in [";", "&&", "||", "|", ">", "<", "`", "$("] {
        cases.push((format!("help {token}"), "InvalidCommand", 2));
        cases.push((format!("help \"a{token}b\""), "InvalidCommand", 2));
    }
    for (command, code, status) in &cases {
        let env = t.exec_json(command);
        assert_eq!(env["error_code"], *code, "{command:?}: {env}");
        assert_eq!(env["exit_code"], *status, "{command:?}");
        assert_eq!(env["result"]["ok"], false);
        assert!(
            !env["stderr"].as_str().unwrap().is_empty(),
            "stderr explains: {command:?}"
        );
    }
    // nothing escaped the home
    assert!(!t.dir.path().join("x").exists());
    let runs = std::fs::read_dir(t.path("artifacts/terminal_exec/runs"))
        .unwrap()
        .count();
    assert_eq!(runs, cases.len(), "every refusal is audited");
}

#[cfg(unix)]
#[test]
fn symlink_inside_the_home_pointing_outside_is_refused() {
    let t = Test::init();
    let outside = t.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, t.path("workspace/link")).unwrap();
    let env = t.exec_json("help --out workspace/link/list.json");
    assert_eq!(env["error_code"], "PathEscapesAgentsRoot");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written outside"
    );
}

#[test]
fn out_writes_an_artifact_and_respects_overwrite_rules() {
    let t = Test::init();
    let env = t.exec_json("help --out artifacts/help/commands.json");
    assert_eq!(env["exit_code"], 0, "{env}");
    assert_eq!(env["artifacts"][0]["path"], "artifacts/help/commands.json");
    let listing: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path("artifacts/help/commands.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(listing["commands"][0]["command"], "help help");
    std::fs::write(t.path("workspace/notes.json"), "mine").unwrap();
    let env = t.exec_json("help --out workspace/notes.json");
    assert_eq!(env["error_code"], "RefuseOverwrite");
    let env = t.exec_json("help --out workspace/notes.json --overwrite");
    assert_eq!(env["error_code"], "ConfirmRequired");
    assert_eq!(
        std::fs::read_to_string(t.path("workspace/notes.json")).unwrap(),
        "mine"
    );
    let env = t.exec_json("help --out workspace/notes.json --overwrite --confirm");
    assert_eq!(env["exit_code"], 0);
    assert_ne!(
        std::fs::read_to_string(t.path("workspace/notes.json")).unwrap(),
        "mine"
    );
}

#[test]
fn help_forms_exit_0() {
    let t = Test::init();
    for form in ["help --help", "help -h", "HELP --help", "help help"] {
        let env = t.exec_json(form);
        assert_eq!(env["exit_code"], 0, "{form}");
        assert_eq!(env["result"]["command"], "help help", "{form}");
        assert!(
            env["result"]["flags"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        );
        assert!(
            env["result"]["usage"]
                .as_str()
                .is_some_and(|u| u.starts_with("help"))
        );
    }
}

#[test]
fn stdin_and_env_secrets_never_reach_the_audit_log() {
    let t = Test::init();
    let dir = t.path("skills/irc-cli/secrets");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".env"),
        "IRC_NICKSERV_PASSWORD=n1ckserv-Secret-99\n",
    )
    .unwrap();
    let out = t.run(&[
        "exec",
        "--json",
        "--stdin",
        "RECOGNISABLE-STDIN-4242",
        "help",
    ]);
    assert_eq!(out.status, 0);
    let out = t.run_stdin(
        &["exec", "--stdin-file", "-", "help"],
        Some("PIPED-STDIN-5151"),
    );
    assert_eq!(out.status, 0);
    std::fs::write(t.dir.path().join("in.txt"), "FILE-STDIN-6161").unwrap();
    let out = t.run(&["exec", "--stdin-file", "in.txt", "help"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    // a secret value typed into a command is masked in output and audit
    let env = t.exec_json("help --out artifacts/n1ckserv-Secret-99.json");
    assert!(!env.to_string().contains("n1ckserv-Secret-99"), "{env}");
    let audit = t.audit_text();
    for marker in [
        "RECOGNISABLE-STDIN-4242",
        "PIPED-STDIN-5151",
        "FILE-STDIN-6161",
        "n1ckserv-Secret-99",
    ] {
        assert!(
            !audit.contains(marker),
            "{marker} leaked into the audit log"
        );
    }
    assert!(!files_text(&t.path("artifacts")).contains("n1ckserv-Secret-99"));
}

#[test]
fn session_flag_is_validated_and_recorded() {
    let t = Test::init();
    let out = t.run(&[
        "exec",
        "--json",
        "--session",
        "agent:main:dm:irc:bob",
        "help",
    ]);
    let env = out.json();
    let run_id = env["run_id"].as_str().unwrap();
    let audit =
        std::fs::read_to_string(t.path(&format!("artifacts/terminal_exec/runs/{run_id}.json")))
            .unwrap();
    assert!(audit.contains("\"session\": \"agent:main:dm:irc:bob\""));
    let out = t.run(&["exec", "--session", "not a key", "help"]);
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("invalid session key"), "{}", out.stderr);
}

#[test]
fn stdin_options_refuse_bad_input() {
    let t = Test::init();
    let out = t.run(&["exec", "--stdin-file", "missing.txt", "help"]);
    assert_eq!(out.status, 1);
    assert!(
        out.stderr.contains("--stdin-file missing.txt"),
        "{}",
        out.stderr
    );
    let out = t.run(&["exec", "--stdin", "a", "--stdin-file", "-", "help"]);
    assert_eq!(out.status, 2, "the two stdin sources conflict");
    assert!(
        !t.path("artifacts/terminal_exec/runs")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "nothing ran"
    );
}

#[test]
fn an_unquoted_command_is_refused_with_the_quoted_form() {
    let t = Test::init();
    let out = t.run(&["exec", "zip", "list", "--in", "x.zip"]);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("lurkbot exec \"zip list --in x.zip\""),
        "{}",
        out.stderr
    );
    // Nothing ran: no audit record.
    assert!(t.audit_text().is_empty(), "{}", t.audit_text());
}
