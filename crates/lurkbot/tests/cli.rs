//! `--version` and `--help`.

use crate::util::Test;

#[test]
fn version_prints_name_and_version() {
    let out = Test::new().run(&["--version"]);
    assert_eq!(out.status, 0);
    assert_eq!(
        out.stdout.trim(),
        format!("lurkbot {}", env!("CARGO_PKG_VERSION"))
    );
}

/// The subcommands a clap `--help` lists under `Commands:` (without `help`).
fn listed_commands(help: &str) -> Vec<String> {
    help.split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("Options:").next())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect()
}

/// Every option line of `help` has a description, beside it or on the next, deeper line.
fn assert_options_described(help: &str, who: &str) {
    let lines: Vec<&str> = help.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if !(2..=6).contains(&indent) || !trimmed.starts_with('-') {
            continue;
        }
        let beside = trimmed.split("  ").filter(|p| !p.trim().is_empty()).count() > 1;
        let below = lines
            .get(i + 1)
            .is_some_and(|next| next.len() - next.trim_start().len() > indent + 4);
        assert!(
            beside || below,
            "{who} --help: no description for {trimmed:?}"
        );
    }
}

#[test]
fn help_documents_every_subcommand() {
    let out = Test::new().run(&["--help"]);
    assert_eq!(out.status, 0);
    assert!(out.stdout.contains("--home"), "{}", out.stdout);
    // Read from the listing itself, so a new subcommand is covered without editing this test.
    let listed = listed_commands(&out.stdout);
    for expected in [
        "init", "exec", "config", "agent", "chat", "doctor", "gateway", "sessions",
    ] {
        assert!(
            listed.iter().any(|l| l == expected),
            "{expected} not in {listed:?}"
        );
    }
    let mut checked = 0;
    for sub in &listed {
        let help = Test::new().run(&[sub, "--help"]);
        assert_eq!(help.status, 0, "{sub} --help: {}", help.stderr);
        assert!(
            help.stdout.contains(&format!("Usage: lurkbot {sub}")),
            "{}",
            help.stdout
        );
        assert_options_described(&help.stdout, sub);
        checked += 1;
        for nested in listed_commands(&help.stdout) {
            let help = Test::new().run(&[sub, &nested, "--help"]);
            let who = format!("{sub} {nested}");
            assert_eq!(help.status, 0, "{who} --help: {}", help.stderr);
            assert!(
                help.stdout.contains(&format!("Usage: lurkbot {who}")),
                "{}",
                help.stdout
            );
            assert_options_described(&help.stdout, &who);
            checked += 1;
        }
    }
    assert!(checked >= 12, "only {checked} help pages checked");
    let out = Test::new().run(&["exec", "--help"]);
    for flag in [
        "--json",
        "--session",
        "--stdin",
        "--stdin-file",
        "--timeout-ms",
        "COMMAND",
    ] {
        assert!(out.stdout.contains(flag), "exec --help lacks {flag}");
    }
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let out = Test::new().run(&["frobnicate"]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("frobnicate"));
}

#[test]
fn completions_and_man_page_come_from_the_same_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Test::new().run(&["completions", shell]);
        assert_eq!(out.status, 0, "{shell}: {}", out.stderr);
        for word in ["lurkbot", "dashboard", "sessions", "home"] {
            assert!(out.stdout.contains(word), "{shell} lacks {word}");
        }
    }
    let bad = Test::new().run(&["completions", "tcsh"]);
    assert_eq!(bad.status, 2);
    let man = Test::new().run(&["man"]);
    assert_eq!(man.status, 0, "{}", man.stderr);
    assert!(
        man.stdout.starts_with(".ie") || man.stdout.contains(".TH lurkbot"),
        "{}",
        &man.stdout[..man.stdout.len().min(200)]
    );
    assert!(man.stdout.contains("exec") && man.stdout.contains("gateway"));
}
