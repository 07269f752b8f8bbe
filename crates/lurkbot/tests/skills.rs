//! `lurkbot skills list|info` on the bundled skills, on the precedence and validity rules, and
//! on the field's real skill folders (OpenClaw's npm package and Hermes Agent's sdist, fetched
//! by scripts/test.sh into LURKBOT_SKILL_CORPORA); and the prompt offering only what is
//! available.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::Value;

use crate::util::Test;

const BUNDLED: &[&str] = &[
    "archive-tar",
    "archive-zip",
    "calendar-cli",
    "irc-cli",
    "rss-cli",
    "terminal-exec",
];

fn list(t: &Test) -> Vec<Value> {
    let out = t.run(&["skills", "list", "--json"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    out.json().as_array().unwrap().clone()
}

fn by_name<'a>(skills: &'a [Value], name: &str) -> &'a Value {
    skills
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no skill {name}"))
}

fn write_skill(dir: &Path, name: &str, extra: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill.\n{extra}---\n# {name}\n"),
    )
    .unwrap();
}

#[test]
fn bundled_skills_precedence_and_refusals() {
    let t = Test::init();
    let skills = list(&t);
    for name in BUNDLED {
        let s = by_name(&skills, name);
        assert_eq!(s["source"], "bundled", "{s}");
        assert_eq!(s["available"], true, "{s}");
        assert_eq!(s["path"], format!("skills/{name}/SKILL.md"));
    }
    assert!(t.path("skills/irc-cli/secrets/.env.example").is_file());
    assert!(t.path("skills/calendar-cli/secrets/.env.example").is_file());
    let zip = std::fs::read_to_string(t.path("skills/archive-zip/SKILL.md")).unwrap();
    assert!(
        zip.contains("zip create") && !zip.contains("tar create"),
        "{zip}"
    );

    // An edited bundled skill is the home's; a deleted one is listed as not installed.
    std::fs::write(
        t.path("skills/rss-cli/SKILL.md"),
        "---\nname: rss-cli\ndescription: My feeds.\n---\n",
    )
    .unwrap();
    std::fs::remove_dir_all(t.path("skills/archive-tar")).unwrap();
    // A workspace skill wins over the home's of the same name; nested category folders load;
    // gated and malformed skills are listed with the reason and the rest still load.
    write_skill(&t.path("skills/notes"), "notes", "");
    write_skill(&t.path("workspace/skills/notes"), "notes", "");
    write_skill(&t.path("workspace/skills/office/sheets"), "sheets", "");
    write_skill(
        &t.path("skills/mac-only"),
        "mac-only",
        "metadata: { \"openclaw\": { \"os\": [\"darwin\"], }, }\n",
    );
    write_skill(
        &t.path("skills/needs-token"),
        "needs-token",
        "prerequisites:\n  env_vars: [NEEDS_TOKEN_KEY]\n",
    );
    write_skill(&t.path("skills/misnamed"), "other-name", "");
    std::fs::create_dir_all(t.path("skills/broken")).unwrap();
    std::fs::write(
        t.path("skills/broken/SKILL.md"),
        "---\nname: [broken\n---\n",
    )
    .unwrap();

    let skills = list(&t);
    assert_eq!(by_name(&skills, "rss-cli")["source"], "home");
    assert_eq!(by_name(&skills, "rss-cli")["pending"], true);
    let tar = by_name(&skills, "archive-tar");
    assert_eq!(tar["available"], false);
    assert!(tar["reason"].as_str().unwrap().contains("lurkbot init"));
    let notes = by_name(&skills, "notes");
    assert_eq!(notes["source"], "workspace");
    assert_eq!(skills.iter().filter(|s| s["name"] == "notes").count(), 1);
    assert_eq!(
        by_name(&skills, "sheets")["path"],
        "workspace/skills/office/sheets/SKILL.md"
    );
    let reason = |name: &str| {
        by_name(&skills, name)["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(reason("mac-only").contains("runs on darwin only"));
    assert!(reason("needs-token").contains("NEEDS_TOKEN_KEY"));
    // A name that is not its folder's loads as the field writes it, noted for doctor.
    let misnamed = by_name(&skills, "other-name");
    assert!(
        misnamed["note"]
            .as_str()
            .unwrap()
            .contains("differs from its folder 'misnamed'"),
        "{misnamed}"
    );
    assert_eq!(misnamed["pending"], true);
    let doctor = t.run(&["doctor"]).stdout;
    assert!(
        doctor.contains(
            "skills/misnamed/SKILL.md (`name: other-name` differs from its folder 'misnamed')"
        ),
        "{doctor}"
    );
    assert!(
        doctor.contains("not offered until you approve them"),
        "{doctor}"
    );
    assert!(reason("broken").starts_with("invalid: the front matter is not valid YAML"));

    // The variable set in the home's .env makes the skill available once approved.
    let env = std::fs::read_to_string(t.path(".env")).unwrap_or_default();
    std::fs::write(t.path(".env"), format!("{env}\nNEEDS_TOKEN_KEY=abc\n")).unwrap();
    let needs = by_name(&list(&t), "needs-token").clone();
    assert_eq!(
        (&needs["available"], &needs["pending"]),
        (&false.into(), &true.into()),
        "{needs}"
    );
    assert!(
        needs["reason"].as_str().unwrap().starts_with("pending:"),
        "{needs}"
    );
    let approved = t.run(&["skills", "approve", "needs-token"]);
    assert_eq!(approved.status, 0, "{}", approved.stderr);
    assert_eq!(by_name(&list(&t), "needs-token")["available"], true);
    // A changed text is pending again (a tool or an archive may have written it).
    write_skill(
        &t.path("skills/needs-token"),
        "needs-token",
        "prerequisites:\n  env_vars: [NEEDS_TOKEN_KEY]\nextra: changed\n",
    );
    assert_eq!(by_name(&list(&t), "needs-token")["pending"], true);
    let again = t.run(&["skills", "approve", "nope"]);
    assert_eq!(again.status, 1);
    assert!(again.stderr.contains("no skill 'nope'"), "{}", again.stderr);
    let bundled = t.run(&["skills", "approve", "archive-zip"]);
    assert_eq!(bundled.status, 1);
    assert!(
        bundled.stderr.contains("is not pending"),
        "{}",
        bundled.stderr
    );
    // The approvals are state: the model's file tools cannot write them.
    assert!(!lurkbot_core::classify_relative(lurkbot_core::SKILL_APPROVALS_FILE).writable());

    // No workspace skill replaces a bundled one that documents a built-in command.
    write_skill(
        &t.path("workspace/skills/terminal-exec"),
        "terminal-exec",
        "",
    );
    let skills = list(&t);
    let impostor = skills
        .iter()
        .find(|s| s["name"] == "terminal-exec" && s["source"] == "workspace")
        .unwrap();
    assert!(
        impostor["reason"]
            .as_str()
            .unwrap()
            .contains("never replaces it"),
        "{impostor}"
    );
    let real = skills
        .iter()
        .find(|s| s["name"] == "terminal-exec" && s["source"] == "bundled")
        .unwrap();
    assert_eq!(real["available"], true, "{real}");

    // A SKILL.md is capped in size: a huge one is invalid, never read into a prompt.
    std::fs::create_dir_all(t.path("skills/huge")).unwrap();
    let huge = format!(
        "---\nname: huge\ndescription: d\n---\n{}",
        "x".repeat(300 * 1024)
    );
    std::fs::write(t.path("skills/huge/SKILL.md"), huge).unwrap();
    let reason_huge = by_name(&list(&t), "huge")["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason_huge.contains("256 KiB"), "{reason_huge}");

    // A SKILL.md that links to a file outside the home is not read (its text would reach the
    // prompt): the skill is invalid, whatever the file says.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("SKILL.md");
    std::fs::write(
        &secret,
        "---\nname: linked\ndescription: text from outside the home\n---\n",
    )
    .unwrap();
    std::fs::create_dir_all(t.path("skills/linked")).unwrap();
    std::os::unix::fs::symlink(&secret, t.path("skills/linked/SKILL.md")).unwrap();
    let skills = list(&t);
    let linked = by_name(&skills, "linked");
    assert_eq!(linked["available"], false);
    assert_eq!(linked["description"], "", "{linked}");
    assert!(
        linked["reason"]
            .as_str()
            .unwrap()
            .contains("not readable here"),
        "{linked}"
    );

    let info = t.run(&["skills", "info", "mac-only", "--json"]);
    assert_eq!(info.status, 0);
    assert_eq!(info.json()["requires"]["os"][0], "darwin");
    let info = t.run(&["skills", "info", "mac-only"]);
    assert!(
        info.stdout.contains("needs systems: darwin"),
        "{}",
        info.stdout
    );
    let out = t.run(&["skills", "info", "nope"]);
    assert_eq!(out.status, 1);
    assert!(out.stderr.contains("skills list"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_offers_only_available_skills() {
    let t = Test::init();
    write_skill(&t.path("skills/notes"), "notes", "");
    write_skill(
        &t.path("skills/mac-only"),
        "mac-only",
        "platforms: [macos]\n",
    );
    write_skill(&t.path("skills/unreviewed"), "unreviewed", "");
    assert_eq!(t.run(&["skills", "approve", "notes"]).status, 0);
    let fake = FakeProvider::start(vec![Step::text("hi")]).await;
    let base = format!("{}/v1", fake.url);
    let out = t.run_env(
        &["agent", "-m", "hello"],
        &[
            ("LURKBOT_MODEL", "openai/fake-model"),
            ("OPENAI_BASE_URL", base.as_str()),
        ],
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    let system = fake.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("- notes: The notes skill.\n"), "{system}");
    assert!(system.contains("- rss-cli: "));
    assert!(!system.contains("mac-only"));
    assert!(
        !system.contains("unreviewed"),
        "a pending skill is not offered"
    );
}

fn corpora() -> PathBuf {
    let dir = std::env::var_os("LURKBOT_SKILL_CORPORA").map(PathBuf::from).expect(
        "LURKBOT_SKILL_CORPORA is not set: scripts/test.sh fetches the skill corpora and sets it",
    );
    assert!(
        dir.join(".complete").is_file(),
        "{} is incomplete",
        dir.display()
    );
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The folder names holding a SKILL.md under `dir`, with repeats.
fn skill_folders(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            skill_folders(&e.path(), out);
        } else if e.file_name() == "SKILL.md" {
            out.push(dir.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
}

/// Loads each `(folder, target)` of the corpus into a fresh home; the skills that came from it,
/// the number of SKILL.md files and of distinct skill names (a name found twice loads once),
/// and a report line on stderr.
fn load_corpus(name: &str, folders: &[(&str, &str)]) -> (Vec<Value>, usize, usize) {
    let t = Test::init();
    let root = corpora().join(name);
    let mut names = Vec::new();
    for (folder, target) in folders {
        copy_dir(&root.join(folder), &t.path(target));
        skill_folders(&root.join(folder), &mut names);
    }
    let files = names.len();
    names.sort();
    names.dedup();
    // Copied in by hand here: the owner reviews them and approves them all.
    let approved = t.run(&["skills", "approve", "--all"]);
    assert_eq!(approved.status, 0, "{}", approved.stderr);
    let skills: Vec<Value> = list(&t)
        .into_iter()
        .filter(|s| s["source"] != "bundled")
        .collect();
    let available = skills.iter().filter(|s| s["available"] == true).count();
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for s in skills.iter().filter(|s| s["available"] == false) {
        let reason = s["reason"].as_str().unwrap();
        let kind = if reason.starts_with("invalid") {
            "invalid"
        } else if reason.starts_with("runs on") {
            "other operating system"
        } else if reason.contains("program") {
            "program not on PATH"
        } else if reason.contains("setting") {
            "setting not set"
        } else {
            "variable not set"
        };
        *why.entry(kind.to_string()).or_default() += 1;
    }
    eprintln!(
        "{name}: {files} SKILL.md, {} listed, {available} available, unavailable: {why:?}",
        skills.len()
    );
    (skills, files, names.len())
}

#[test]
fn openclaw_skills_load_unchanged() {
    let (skills, files, distinct) = load_corpus(
        "openclaw",
        &[("skills", "skills"), ("custodian-skills", "skills")],
    );
    assert_eq!(files, 55);
    assert_eq!(skills.len(), distinct, "every folder is one skill");
    // Every manifest parses (trailing commas in the flow mappings included) and keeps the name
    // rule; only requirements can keep one from being offered.
    for s in &skills {
        let reason = s["reason"].as_str().unwrap_or("");
        assert!(!reason.starts_with("invalid"), "{s}");
        assert!(!s["description"].as_str().unwrap().is_empty(), "{s}");
    }
    let gated_by_os = skills
        .iter()
        .filter(|s| s["reason"].as_str().unwrap_or("").starts_with("runs on"))
        .count();
    // Five of the pinned corpus name only darwin or win32 in `metadata.openclaw.os`.
    assert_eq!(
        gated_by_os, 5,
        "darwin-only and win32-only skills are gated here"
    );
    assert!(skills.iter().any(|s| s["available"] == true));
}

#[test]
fn hermes_skills_load_from_their_category_folders() {
    let (skills, files, distinct) = load_corpus(
        "hermes",
        // As Hermes Agent keeps them: the shipped skills and the optional ones apart.
        &[
            ("skills", "workspace/skills"),
            ("optional-skills", "skills"),
        ],
    );
    assert_eq!(files, 177);
    assert_eq!(
        skills.len(),
        distinct,
        "one entry per name, the first found winning"
    );
    let mut names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.dedup();
    assert_eq!(names.len(), skills.len(), "one entry per name");
    for s in &skills {
        let path = s["path"].as_str().unwrap();
        let depth = path.trim_start_matches("workspace/").matches('/').count();
        assert!(
            (2..=4).contains(&depth),
            "[category/[subcategory/]]name/SKILL.md: {path}"
        );
        let reason = s["reason"].as_str().unwrap_or("");
        // Every manifest loads as Hermes Agent loads it: a name that is not its folder's or
        // not an agentskills.io name is noted, never refused.
        assert!(!reason.starts_with("invalid"), "{s}");
        assert_eq!(s["pending"], false, "approved: {s}");
    }
    let noted = skills.iter().filter(|s| s["note"].is_string()).count();
    assert!(noted >= 18, "{noted} noted");
    assert!(skills.iter().filter(|s| s["available"] == true).count() > 100);
}
