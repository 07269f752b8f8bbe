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

#[test]
fn help_documents_every_subcommand() {
    let out = Test::new().run(&["--help"]);
    assert_eq!(out.status, 0);
    for sub in ["init", "exec", "config", "--home"] {
        assert!(
            out.stdout.contains(sub),
            "--help lacks {sub}: {}",
            out.stdout
        );
    }
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
    let out = Test::new().run(&["config", "--help"]);
    for sub in ["get", "set", "path"] {
        assert!(out.stdout.contains(sub));
    }
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let out = Test::new().run(&["frobnicate"]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("frobnicate"));
}
