//! `lurkbot users` (ARCHITECTURE.md §6.2): changes made on the store while no gateway runs,
//! and through the running gateway otherwise — where a renewed token stops the old one at
//! once and a user's `exec --gateway` runs in that user's own home.

use crate::util::{Test, start_gateway};

fn ids(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn users_are_added_listed_renewed_and_removed() {
    let t = Test::init();
    let on = t.run(&["config", "set", "users.enabled", "true"]);
    assert_eq!(on.status, 0, "{}", on.stderr);

    // No gateway: the store is changed directly.
    let added = t.run(&["users", "add", "alice"]);
    assert_eq!(added.status, 0, "{}", added.stderr);
    let token = added.stdout.trim().to_string();
    assert!(
        token.starts_with("lbu_") && !token.contains('\n'),
        "{}",
        added.stdout
    );
    assert!(t.path("users/alice/workspace/AGENTS.md").is_file());
    let again = t.run(&["users", "add", "alice"]);
    assert_eq!(again.status, 1);
    assert!(again.stderr.contains("exists already"), "{}", again.stderr);
    let bad = t.run(&["users", "add", "../evil"]);
    assert_eq!(bad.status, 1);
    assert!(bad.stderr.contains("not a user name"), "{}", bad.stderr);
    assert!(!t.home.parent().unwrap().join("evil").exists());
    let set = t.run_stdin(&["users", "passwd", "alice"], Some("a long password\n"));
    assert_eq!(set.status, 0, "{}", set.stderr);
    let listed = t.run(&["users", "list", "--json"]).json();
    assert_eq!(listed[0]["name"], "alice");
    assert_eq!(listed[0]["admin"], false);
    assert_eq!(listed[0]["password"], true);
    assert!(listed[0]["createdAtMs"].as_u64().unwrap() > 0);
    let stored = std::fs::read_to_string(t.path("users/users.json")).unwrap();
    assert!(!stored.contains(&token) && !stored.contains("a long password"));
    // Removing asks; a script must say --yes.
    let asked = t.run(&["users", "remove", "alice"]);
    assert_eq!(asked.status, 2, "{}", asked.stderr);
    assert!(asked.stderr.contains("--yes"));
    assert_eq!(
        t.run(&["users", "list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // `doctor` says the gateway is shared, and that nothing moved.
    let doctor = t.run(&["doctor", "--json"]).stdout;
    let users: serde_json::Value = doctor
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|c| c["check"] == "users")
        .unwrap_or_else(|| panic!("{doctor}"));
    assert!(
        users["detail"].as_str().unwrap().contains("1 user(s)"),
        "{users}"
    );

    // The gateway runs: changes go through it.
    let gw = start_gateway(&t, &[]);
    let bob = t.run(&["users", "add", "bob"]);
    assert_eq!(bob.status, 0, "{}", bob.stderr);
    let bob_token = bob.stdout.trim().to_string();
    let run_as = |token: &str| {
        t.run_env(
            &["exec", "--gateway", &gw.ws, "help"],
            &[("LURKBOT_GATEWAY_TOKEN", token)],
        )
    };
    let before = ids(&t.path("artifacts/terminal_exec/runs"));
    let ran = run_as(&bob_token);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(ids(&t.path("users/bob/artifacts/terminal_exec/runs")), 1);
    assert_eq!(
        ids(&t.path("artifacts/terminal_exec/runs")),
        before,
        "not in the owner's home"
    );
    let renewed = t.run(&["users", "token", "bob"]);
    assert_eq!(renewed.status, 0, "{}", renewed.stderr);
    let new_token = renewed.stdout.trim().to_string();
    assert_ne!(new_token, bob_token);
    let stale = run_as(&bob_token);
    assert_ne!(stale.status, 0);
    assert!(
        stale.stderr.contains("UNAUTHORIZED") || stale.stderr.contains("token"),
        "{}",
        stale.stderr
    );
    assert_eq!(run_as(&new_token).status, 0);
    let removed = t.run(&["users", "remove", "bob", "--yes", "--purge"]);
    assert_eq!(removed.status, 0, "{}", removed.stderr);
    assert!(!t.path("users/bob").exists());
    assert_ne!(run_as(&new_token).status, 0);
    let listed = t.run(&["users", "list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let (status, _) = gw.stop();
    assert_eq!(status, 0);
}

/// A config.toml that does not parse is refused by every `users` command, naming the file and
/// the problem; nothing is added on the defaults (which would put the user, or on PostgreSQL
/// its state, where the owner's settings do not say).
#[test]
fn users_commands_refuse_a_config_that_does_not_parse() {
    let t = Test::init();
    let config = t.path("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[users]\nenabled = true\n[state]\nurl = \"postgres://lurk@127.0.0.1:9/db\"\nthis is not toml\n");
    std::fs::write(&config, text).unwrap();
    for args in [
        &["users", "add", "alice"][..],
        &["users", "list"][..],
        &["users", "remove", "alice"][..],
    ] {
        let out = t.run(args);
        assert_ne!(out.status, 0, "{args:?}: {}", out.stdout);
        assert!(
            out.stderr.contains("config.toml"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    }
    assert!(
        !t.path("users/alice").exists(),
        "a user made on the defaults"
    );
}
