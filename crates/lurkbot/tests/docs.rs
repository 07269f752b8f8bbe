//! The docs say what the code has: every crate is named in README's Code table and
//! ARCHITECTURE §1, every subcommand of `lurkbot --help` in the guide's CLI synopsis
//! (`docs/guide/cli.md`) and ARCHITECTURE §3, every `bench/run.sh` mode in the guide's
//! Development page and CONTRIBUTING, every page of the guide in its index and the README short,
//! and every page the man page names (`lurkbot-cron(1)`) is one `lurkbot man --dir` writes. The
//! next drift fails here.

use std::path::{Path, PathBuf};

use crate::util::Test;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of `doc` from the line starting with `start` to the next line starting with `end`.
fn section<'a>(doc: &'a str, start: &str, end: &str) -> &'a str {
    let from = doc
        .find(&format!("\n{start}"))
        .unwrap_or_else(|| panic!("no section {start}"));
    let rest = &doc[from + 1..];
    let to = rest[start.len()..]
        .find(&format!("\n{end}"))
        .map_or(rest.len(), |i| i + start.len());
    &rest[..to]
}

#[test]
fn every_crate_is_in_the_readme_and_architecture() {
    let readme = read("README.md");
    let code = section(&readme, "## Code", "## ");
    let architecture = read("docs/ARCHITECTURE.md");
    let crates_section = section(&architecture, "## 1.", "## 2.");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !code.contains(&format!("`crates/{name}`")) {
            missing.push(format!("README's Code table lacks crates/{name}"));
        }
        if !crates_section.contains(&format!("`{name}`")) {
            missing.push(format!("ARCHITECTURE §1 lacks {name}"));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

/// The subcommands `lurkbot --help` lists.
fn subcommands() -> Vec<String> {
    let help = Test::new().run(&["--help"]).stdout;
    let list = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("Options:").next())
        .unwrap_or_default()
        .to_string();
    list.lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_subcommand_is_in_the_guides_synopsis_and_architecture() {
    let names = subcommands();
    assert!(names.len() > 20, "{names:?}");
    let page = format!("\n{}", read("docs/guide/cli.md"));
    let synopsis = section(&page, "# The CLI", "- `init`");
    let architecture = read("docs/ARCHITECTURE.md");
    let cli = section(&architecture, "## 3.", "## 4.");
    let mut missing = Vec::new();
    for name in &names {
        let shown = [
            format!("lurkbot [--home DIR] {name} "),
            format!("lurkbot [--home DIR] {name}\n"),
            format!("lurkbot {name} "),
            format!("lurkbot {name}\n"),
        ];
        if !shown.iter().any(|s| synopsis.contains(s.as_str())) {
            missing.push(format!(
                "docs/guide/cli.md's synopsis lacks `lurkbot {name}`"
            ));
        }
        let listed = cli
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .any(|word| word == name);
        if !listed {
            missing.push(format!("ARCHITECTURE §3 lacks {name}"));
        }
    }
    // Flags the synopsis must show because users look for them there.
    for flag in ["--budget-tokens"] {
        if !synopsis.contains(flag) {
            missing.push(format!("docs/guide/cli.md's synopsis lacks {flag}"));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn every_bench_mode_is_in_the_guide_and_contributing() {
    let script = read("bench/run.sh");
    let usage = script
        .lines()
        .find(|l| l.starts_with("# Usage: bench/run.sh ["))
        .expect("bench/run.sh has a usage line");
    let modes: Vec<&str> = usage
        .split('[')
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap_or_default()
        .split('|')
        .collect();
    assert!(modes.len() > 5, "{modes:?}");
    let mut missing = Vec::new();
    let guide = read("docs/guide/development.md") + &read("docs/guide/benchmarks.md");
    for (doc, text) in [
        ("the guide", guide),
        ("CONTRIBUTING.md", read("CONTRIBUTING.md")),
    ] {
        for mode in &modes {
            if !text.contains(&format!("bench/run.sh {mode}")) {
                missing.push(format!("{doc} lacks `bench/run.sh {mode}`"));
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn every_man_page_named_is_written() {
    let t = Test::new();
    let dir = tempfile::tempdir().unwrap();
    let out = t.run(&["man", "--dir", &dir.path().display().to_string()]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(pages.contains(&"lurkbot.1".to_string()), "{pages:?}");
    let mut missing = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap();
        for (at, _) in text.match_indices("(1)") {
            let before = &text[..at];
            let start = before
                .rfind(|c: char| c.is_whitespace())
                .map_or(0, |i| i + 1);
            let named = before[start..].replace("\\-", "-");
            if named.starts_with("lurkbot") && !pages.contains(&format!("{named}.1")) {
                missing.push(format!("{page} names {named}(1), which is not written"));
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
    // The page printed by `lurkbot man` is the main one written.
    let printed = t.run(&["man"]).stdout;
    assert_eq!(
        printed,
        std::fs::read_to_string(dir.path().join("lurkbot.1")).unwrap()
    );
}

/// The README stays short (what LurkBot is, run and test, install, the tables, where to go
/// next) and leads to the guide's index; every page of the guide is in both indexes.
#[test]
fn the_readme_is_short_and_every_guide_page_is_indexed() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: move the detail into docs/guide/"
    );
    let index = read("docs/README.md");
    assert!(
        readme.contains("(docs/README.md)"),
        "README.md does not lead to the guide"
    );
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("docs/guide"))
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !index.contains(&format!("(guide/{name})")) {
            missing.push(format!("docs/README.md lacks guide/{name}"));
        }
        if !readme.contains(&format!("(docs/guide/{name}")) {
            missing.push(format!("README.md's index lacks docs/guide/{name}"));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}
