//! The gateway's rooms (ARCHITECTURE.md §6, "The gateway's rooms"): its files import each other
//! one way — no import circle — and the capabilities below the composition root never see the
//! whole state.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lurkbot-gateway/src")
}

/// Every source file of the gateway, as its module path (`turns::host`, `state`, `lib`).
fn modules() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                let mut inner = prefix.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut parts = prefix.to_vec();
                if stem != "mod" {
                    parts.push(stem.to_string());
                }
                out.insert(parts.join("::"), path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&src(), &[], &mut out);
    assert!(out.len() > 50, "only {} gateway files found", out.len());
    out
}

/// The modules `module`'s own code (its tests left out) names through `crate::`; its own
/// folder's `mod.rs` (what `super::` names) is not counted: the folder is one room.
fn imports(module: &str, path: &Path, known: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let words: Vec<&str> = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or_default()
            .split("::")
            .collect();
        let target = (1..=words.len())
            .rev()
            .map(|n| words[..n].join("::"))
            .find(|candidate| known.contains_key(candidate));
        let is_own_folder = |t: &String| module.starts_with(&format!("{t}::"));
        if let Some(target) = target.filter(|t| t != module && !is_own_folder(t)) {
            found.insert(target);
        }
    }
    found
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let known = modules();
    known
        .iter()
        .map(|(module, path)| (module.clone(), imports(module, path, &known)))
        .collect()
}

/// The first import circle found, as the modules along it.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, done, path) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_gateways_files_import_each_other_one_way() {
    let graph = graph();
    assert!(
        graph.get("server").is_some_and(|i| i.contains("state")),
        "the import reader lost its way: server.rs must import the state"
    );
    assert_eq!(circle(&graph), None, "an import circle in lurkbot-gateway");
}

#[test]
fn the_capabilities_below_the_state_never_see_it() {
    let below = ["channels", "turns", "nodes", "events", "users", "protocol"];
    let graph = graph();
    let mut seeing: Vec<&String> = graph
        .iter()
        .filter(|(module, _)| {
            below
                .iter()
                .any(|b| *module == b || module.starts_with(&format!("{b}::")))
        })
        .filter(|(_, imports)| imports.contains("state"))
        .map(|(module, _)| module)
        .collect();
    seeing.sort();
    assert!(
        seeing.is_empty(),
        "these take the whole AppState; give them the handles they use: {seeing:?}"
    );
}

/// The files that take the whole `AppState`: the composition root, the server, the
/// connections and who may come in, the method tables that dispatch (each handler gets the
/// handles it uses), and the operations on the whole gateway. A file that stops needing it
/// leaves the list; a new file does not join it without a reason written here.
const WHOLE_STATE: &[&str] = &[
    "lib",
    "server",
    "state",
    "state::members",
    "transport::accept",
    "transport::node_link",
    "transport::ws",
    "access::credentials",
    "access::http",
    "access::sign_in",
    "api::hooks",
    "api::openai",
    "methods",
    "methods::handler",
    "methods::users",
    "openclaw",
    "openclaw::catalog",
    "openclaw::hello",
    "ops::gateway_control",
    "ops::metrics",
    "ops::reload",
    "ops::shutdown",
    "ops::status",
];

#[test]
fn only_the_composition_and_dispatch_take_the_whole_state() {
    let taking: BTreeSet<String> = modules()
        .into_iter()
        .filter(|(_, path)| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            code.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| l.contains("AppState"))
        })
        .map(|(module, _)| module)
        .collect();
    let allowed: BTreeSet<String> = WHOLE_STATE.iter().map(|m| m.to_string()).collect();
    let new: Vec<&String> = taking.difference(&allowed).collect();
    let gone: Vec<&String> = allowed.difference(&taking).collect();
    assert!(
        new.is_empty(),
        "these take the whole AppState; give them the handles they use: {new:?}"
    );
    assert!(
        gone.is_empty(),
        "these no longer take AppState: strike them from WHOLE_STATE: {gone:?}"
    );
}

#[test]
fn a_circle_is_found_where_there_is_one() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"][..]),
        ("c", &["a"][..]),
        ("d", &[][..]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(
        circle(&graph).map(|c| c.len()),
        Some(3),
        "the circle finder must see a → b → c → a"
    );
}
