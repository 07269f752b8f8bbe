//! `lurkbot config get|set|unset|list|path`.

use crate::util::Test;

#[test]
fn path_get_and_set_keep_comments() {
    let t = Test::init();
    let out = t.run(&["config", "path"]);
    assert_eq!(
        out.stdout.trim(),
        t.path("config.toml").display().to_string()
    );
    assert_eq!(
        t.run(&["config", "get", "permissions.calendar"]).stdout,
        "none\n"
    );
    let out = t.run(&["config", "set", "permissions.calendar", "read-write"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(
        t.run(&["config", "get", "permissions.calendar"]).stdout,
        "read-write\n"
    );
    assert_eq!(t.run(&["config", "set", "gateway.port", "19000"]).status, 0);
    assert_eq!(t.run(&["config", "get", "gateway.port"]).stdout, "19000\n");
    let text = std::fs::read_to_string(t.path("config.toml")).unwrap();
    assert!(
        text.contains("# What the `cal` command may do"),
        "comments kept"
    );
    assert!(text.contains("calendar = \"read-write\""));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(t.path("config.toml"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
    }
}

#[test]
fn refusals_leave_the_file_unchanged() {
    let t = Test::init();
    let before = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let out = t.run(&["config", "set", "permissions.calendar", "write"]);
    assert_ne!(out.status, 0);
    assert!(
        out.stderr.contains("permissions.calendar"),
        "{}",
        out.stderr
    );
    let out = t.run(&["config", "set", "gateway.token", "abc"]);
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("secret"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(t.path("config.toml")).unwrap(),
        before
    );
    let out = t.run(&["config", "get", "gateway.token"]);
    assert_eq!(out.stdout, "********\n", "secrets are masked");
    let out = t.run(&["config", "get", "no.such.key"]);
    assert_eq!(out.status, 1);
    assert!(out.stderr.contains("not set"));
}

#[test]
fn malformed_config_names_file_line_and_key() {
    let t = Test::init();
    std::fs::write(
        t.path("config.toml"),
        "# x\n[gateway]\nbind = \"127.0.0.1\"\nport = \"high\"\n",
    )
    .unwrap();
    for args in [
        &["config", "get", "gateway.bind"][..],
        &["config", "set", "gateway.bind", "::1"],
    ] {
        let out = t.run(args);
        assert_ne!(out.status, 0);
        let expected = format!(
            "{}:4:8: key 'gateway.port'",
            t.path("config.toml").display()
        );
        assert!(out.stderr.contains(&expected), "{}", out.stderr);
    }
    std::fs::write(t.path("config.toml"), "[gateway\nport = 1\n").unwrap();
    let out = t.run(&["config", "get", "gateway.port"]);
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("config.toml:1:"), "{}", out.stderr);
}

#[cfg(unix)]
#[test]
fn set_before_init_creates_a_private_home() {
    use std::os::unix::fs::PermissionsExt;
    let t = Test::new();
    assert_eq!(
        t.run(&["config", "set", "permissions.calendar", "read"])
            .status,
        0
    );
    assert_eq!(
        std::fs::metadata(&t.home).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(t.path("config.toml"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[test]
fn typos_and_contradictions_are_refused_with_a_hint() {
    let t = Test::init();
    let before = std::fs::read_to_string(t.path("config.toml")).unwrap();
    for (key, value, hint) in [
        (
            "approvals.confrim",
            "false",
            "did you mean 'approvals.confirm'",
        ),
        ("gateway.prot", "1", "did you mean 'gateway.port'"),
        (
            "agent.reserve_tokens",
            "200000",
            "must be smaller than agent.context_window",
        ),
        ("agent.model", "gpt-4o", "openai/gpt-4o"),
    ] {
        let out = t.run(&["config", "set", key, value]);
        assert_ne!(out.status, 0, "{key} was accepted");
        assert!(out.stderr.contains(hint), "{key}: {}", out.stderr);
        assert_eq!(
            std::fs::read_to_string(t.path("config.toml")).unwrap(),
            before
        );
    }
    // A typo written by hand is caught by doctor.
    std::fs::write(
        t.path("config.toml"),
        format!("{before}\n[network]\nallow_privat = true\n"),
    )
    .unwrap();
    let out = t.run(&["doctor", "--json"]);
    assert!(
        out.stdout.contains("did you mean 'network.allow_private'"),
        "{}",
        out.stdout
    );
    assert_eq!(out.status, 1);
}

#[test]
fn unset_brings_the_default_back_and_keeps_comments() {
    let t = Test::init();
    assert_eq!(t.run(&["config", "set", "gateway.port", "19000"]).status, 0);
    let out = t.run(&["config", "unset", "gateway.port"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(out.stdout.contains("unset gateway.port"), "{}", out.stdout);
    let left = t.run(&["config", "get", "gateway.port"]);
    assert_eq!(left.status, 1, "{}", left.stdout);
    let text = std::fs::read_to_string(t.path("config.toml")).unwrap();
    assert!(
        text.contains("# What the `cal` command may do"),
        "comments kept"
    );
    // Unsetting what is not set says so and changes nothing.
    let again = t.run(&["config", "unset", "gateway.port"]);
    assert_eq!(again.status, 1);
    assert!(again.stderr.contains("is not set"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(t.path("config.toml")).unwrap(),
        text
    );
    assert_eq!(t.run(&["config", "unset", "nosuch.key"]).status, 1);
    // An unset whose default contradicts another setting is refused and changes nothing.
    assert_eq!(
        t.run(&["config", "set", "agent.reserve_tokens", "5000"])
            .status,
        0
    );
    assert_eq!(
        t.run(&["config", "set", "agent.context_window", "10000"])
            .status,
        0
    );
    let before = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let refused = t.run(&["config", "unset", "agent.reserve_tokens"]);
    assert_eq!(refused.status, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("reserve_tokens"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        std::fs::read_to_string(t.path("config.toml")).unwrap(),
        before
    );
}

#[test]
fn list_shows_every_value_with_its_source_and_masks_secrets() {
    let t = Test::init();
    assert_eq!(t.run(&["config", "set", "gateway.port", "19000"]).status, 0);
    // RUST_LOG in the home's .env, LURKBOT_LOG in the environment: the latter wins.
    std::fs::write(t.path(".env"), "RUST_LOG=trace\n").unwrap();
    let out = t.run_env(
        &["config", "list", "--json"],
        &[
            ("LURKBOT_MODEL", "openai/from-env"),
            ("LURKBOT_LOG", "debug"),
        ],
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    let rows: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let row = |key: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("{key} missing from {rows}"))
    };
    assert_eq!(row("gateway.port")["value"], 19000);
    assert_eq!(row("gateway.port")["source"], "file");
    assert_eq!(row("agent.model")["value"], "openai/from-env");
    assert_eq!(row("agent.model")["source"], "env LURKBOT_MODEL");
    assert_eq!(row("agent.context_window")["source"], "default");
    assert_eq!(row("log.level")["value"], "debug");
    assert_eq!(row("log.level")["source"], "env LURKBOT_LOG");
    assert_eq!(row("gateway.token")["value"], "********");
    let token = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let secret = token
        .lines()
        .find_map(|l| l.strip_prefix("token = \""))
        .unwrap()
        .trim_end_matches('"');
    assert!(!out.stdout.contains(secret));
    let text = t.run(&["config", "list"]);
    assert!(
        text.stdout.contains("gateway.port = 19000  (file)"),
        "{}",
        text.stdout
    );
    assert!(!text.stdout.contains(secret));
}
