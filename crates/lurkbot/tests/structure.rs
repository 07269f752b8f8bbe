//! The house rules anyone can check: small files, documentation that matches the code, links
//! that resolve inside the repository, comments that cite the repository's own documents.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir` (targets and fuzz corpora skipped).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if !matches!(
                name.to_str(),
                Some("target" | "corpus" | "artifacts" | "logs")
            ) {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn all_rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["crates", "bench", "fuzz"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 100, "only {} files found", files.len());
    files
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = all_rust_files()
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > 600).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files: {long:?}");
}

#[test]
fn comments_cite_documents_that_are_in_the_repository() {
    let cited: Vec<String> = all_rust_files()
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            // Spelled in pieces so this file does not match itself.
            let outside = [
                concat!("DESIGN", ".md"),
                concat!("DESIGN", " §"),
                concat!("PRD", "-0"),
            ];
            let bad = text.lines().any(|l| outside.iter().any(|o| l.contains(o)));
            bad.then(|| f.display().to_string())
        })
        .collect();
    assert!(
        cited.is_empty(),
        "cite docs/ARCHITECTURE.md instead of documents outside the repository: {cited:?}"
    );
}

/// The repository's documents: the top-level ones, ARCHITECTURE and the guide's pages.
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = [
        "README.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "docs/ARCHITECTURE.md",
        "docs/README.md",
    ]
    .iter()
    .map(|d| (*d).to_string())
    .collect();
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs/guide"))
        .map(|d| {
            d.flatten()
                .map(|e| format!("docs/guide/{}", e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    docs.extend(pages);
    docs
}

/// A heading's anchor as GitHub makes it: lowercase, spaces as `-`, punctuation dropped.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn document_links_resolve_inside_the_repository() {
    let mut missing = Vec::new();
    for doc in documents() {
        let path = root().join(&doc);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
        let base = path.parent().unwrap_or(Path::new("."));
        for (start, _) in text.match_indices("](") {
            let link: String = text[start + 2..]
                .chars()
                .take_while(|c| *c != ')')
                .collect();
            let (target, anchor) = link.split_once('#').unwrap_or((&link, ""));
            if link.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let file = if target.is_empty() {
                path.clone()
            } else {
                base.join(target)
            };
            if !file.exists() {
                missing.push(format!("{doc} -> {target}"));
                continue;
            }
            // An anchor names a heading of the page it points to.
            if !anchor.is_empty() && file.extension().is_some_and(|e| e == "md") {
                let page = std::fs::read_to_string(&file).unwrap_or_default();
                let found = page
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .map(|l| anchor_of(l.trim_start_matches('#')))
                    .any(|a| a == anchor);
                if !found {
                    missing.push(format!("{doc} -> {target}#{anchor}"));
                }
            }
        }
        assert!(
            !text.contains("../shared"),
            "{doc} points outside the repository"
        );
    }
    assert!(missing.is_empty(), "broken links: {missing:?}");
}

#[test]
fn the_architecture_document_names_only_what_exists() {
    let text = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let files: Vec<String> = all_rust_files()
        .iter()
        .filter_map(|f| f.file_name()?.to_str().map(str::to_string))
        .collect();
    let mut unknown = Vec::new();
    let mut checked = 0;
    for quoted in text.split('`').skip(1).step_by(2) {
        if let Some(crate_name) = quoted.strip_prefix("lurkbot-") {
            let name = crate_name.split('/').next().unwrap_or_default();
            if !name.is_empty() && !name.contains(' ') {
                checked += 1;
                let bench = std::fs::read_to_string(root().join("bench/Cargo.toml"))
                    .is_ok_and(|t| t.contains(&format!("name = \"lurkbot-{name}\"")));
                if !bench
                    && !root()
                        .join("crates")
                        .join(format!("lurkbot-{name}"))
                        .exists()
                {
                    unknown.push(quoted.to_string());
                }
            }
        } else if quoted.ends_with(".rs") && !quoted.contains(' ') {
            checked += 1;
            let name = quoted.rsplit('/').next().unwrap_or(quoted);
            if !files.iter().any(|f| f == name) {
                unknown.push(quoted.to_string());
            }
        }
    }
    assert!(checked > 40, "only {checked} names checked");
    assert!(
        unknown.is_empty(),
        "named in ARCHITECTURE.md but absent: {unknown:?}"
    );
}

/// Every section cited as ARCHITECTURE's (`ARCHITECTURE.md §7c` in code and documents, a bare
/// `§4.6` inside ARCHITECTURE.md) is a heading there, so no citation points at nothing.
#[test]
fn every_cited_architecture_section_exists() {
    let architecture = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let sections: Vec<String> = architecture
        .lines()
        .filter(|l| l.starts_with("## ") || l.starts_with("### "))
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|id| id.trim_end_matches('.').to_string())
        .collect();
    assert!(sections.len() > 15, "{sections:?}");
    let cited = |line: &str| -> Vec<String> {
        // Only what follows the mention of ARCHITECTURE (a seed's own section may come before).
        let line = line.find("ARCHITECTURE").map_or(line, |at| &line[at..]);
        line.split('§')
            .skip(1)
            .map(|rest| {
                rest.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                    .collect::<String>()
                    .trim_end_matches('.')
                    .to_string()
            })
            .filter(|id| !id.is_empty())
            .collect()
    };
    let mut sources: Vec<(String, String)> = all_rust_files()
        .iter()
        .filter_map(|f| Some((f.display().to_string(), std::fs::read_to_string(f).ok()?)))
        .collect();
    let mut docs = documents();
    docs.retain(|d| d != "docs/ARCHITECTURE.md");
    docs.push("docs/CONFIG.md".into());
    for doc in docs {
        if let Ok(text) = std::fs::read_to_string(root().join(&doc)) {
            sources.push((doc, text));
        }
    }
    let mut missing = Vec::new();
    let mut checked = 0;
    for (name, text) in &sources {
        for line in text
            .lines()
            .filter(|l| l.contains("ARCHITECTURE") && l.contains('§'))
        {
            for id in cited(line) {
                checked += 1;
                if !sections.contains(&id) {
                    missing.push(format!("{name}: §{id}"));
                }
            }
        }
    }
    for line in architecture.lines().filter(|l| l.contains('§')) {
        for id in cited(line) {
            checked += 1;
            if !sections.contains(&id) {
                missing.push(format!("docs/ARCHITECTURE.md: §{id}"));
            }
        }
    }
    assert!(checked > 50, "only {checked} citations checked");
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "cited but not in ARCHITECTURE.md: {missing:?}"
    );
}

/// The source files (tests left out) that contain `needle`, by home-relative path, other than
/// those `allowed` lists and those `exempt` accepts.
fn files_with_outside(
    needle: &str,
    allowed: &[&str],
    exempt: impl Fn(&str) -> bool,
) -> Vec<String> {
    let root = root();
    let mut found: Vec<String> = all_rust_files()
        .iter()
        .filter(|f| !f.components().any(|c| c.as_os_str() == "tests"))
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(needle)))
        .filter_map(|f| {
            let relative = f
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            (!allowed.contains(&relative.as_str()) && !exempt(&relative)).then_some(relative)
        })
        .collect();
    found.sort();
    found
}

/// ARCHITECTURE.md §5.1: the owner's authority is made only where the owner acts — the CLI's
/// cron command, the operator protocol's cron methods, the heartbeat's configured target — and
/// in the gate that defines it; everything else carries the asker it was given.
#[test]
fn owner_authority_is_made_only_at_owner_entry_points() {
    let entry_points = [
        "crates/lurkbot-agent/src/gate/mod.rs",
        "crates/lurkbot-agent/src/heartbeat.rs",
        "crates/lurkbot-gateway/src/channels/alert.rs",
        "crates/lurkbot-gateway/src/methods/cron.rs",
        "crates/lurkbot-gateway/src/methods/nodes.rs",
        "crates/lurkbot/src/cli/cron.rs",
    ];
    let needle = concat!("Asker", "::", "Owner");
    let makers = files_with_outside(needle, &entry_points, |_| false);
    assert!(
        makers.is_empty(),
        "the owner's authority is made outside the owner's entry points: {makers:?}"
    );
    let root = root();
    // The rule still has something to check: the entry points do make it.
    for file in entry_points {
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        assert!(
            text.contains(needle),
            "{file} no longer makes it: update the list"
        );
    }
}

/// ARCHITECTURE.md §5.1: every fetcher of the agent and the gateway takes its network rules from
/// the gate (`gate::web_rules`), which decides them from where the URL came from; only the
/// gate and `terminal_exec`'s own commands (a lower crate) read the policy from the settings.
#[test]
fn network_rules_come_from_the_gate() {
    let allowed = ["crates/lurkbot-agent/src/gate/web.rs"];
    let needle = concat!("NetworkPolicy", "::", "from_config");
    let readers = files_with_outside(needle, &allowed, |f| f.starts_with("crates/lurkbot-term/"));
    assert!(
        readers.is_empty(),
        "network rules read outside the gate: {readers:?}"
    );
    let root = root();
    let gate = std::fs::read_to_string(root.join(allowed[0])).unwrap_or_default();
    assert!(
        gate.contains(needle),
        "the gate no longer reads them: update the test"
    );
}

#[test]
fn events_are_built_only_in_the_protocol_module() {
    // The gateway's events are `lurkbot_gateway::protocol::Event`s; a JSON event frame or a
    // named emission written by hand anywhere else is a second, drifting definition.
    let by_hand = [concat!("\"type\": ", "\"event\""), concat!(".emit(", "\"")];
    let mut found = Vec::new();
    for file in all_rust_files() {
        let shown = file.display().to_string();
        if !shown.contains("/src/") || shown.contains("/protocol/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if by_hand.iter().any(|p| text.contains(p)) {
            found.push(shown);
        }
    }
    assert!(found.is_empty(), "events built by hand in {found:?}");
}

#[test]
fn crate_dependencies_point_one_way() {
    // The order of docs/ARCHITECTURE.md §1: a crate may depend only on crates before it.
    let order = [
        "lurkbot-core",
        "lurkbot-state",
        "lurkbot-term",
        "lurkbot-llm",
        "lurkbot-memory",
        "lurkbot-media",
        "lurkbot-browser",
        "lurkbot-agent",
        "lurkbot-channels",
        "lurkbot-gateway",
        "lurkbot",
    ];
    let mut edges = 0;
    for (position, name) in order.iter().enumerate() {
        let manifest = std::fs::read_to_string(root().join("crates").join(name).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Normal dependencies only: dev-dependencies may reach anywhere (test support).
        let normal = manifest
            .split("\n[dependencies]\n")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap_or_default();
        for line in normal.lines() {
            let dep = line.split(['.', ' ', '=']).next().unwrap_or_default();
            if let Some(at) = order.iter().position(|o| *o == dep) {
                edges += 1;
                assert!(
                    at < position,
                    "{name} depends on {dep}, which comes after it"
                );
            } else {
                assert!(
                    !dep.starts_with("lurkbot-") || dep == "lurkbot-test-support",
                    "{name} depends on {dep}, which is not in the crate order"
                );
            }
        }
    }
    assert!(
        edges >= 10,
        "only {edges} dependencies between crates found"
    );
}
