//! Skills (ARCHITECTURE.md §7): folders holding a `SKILL.md`, found in the workspace's
//! `skills/` first, then the home's `skills/`, each either directly (`skills/<name>/`) or in
//! category folders (`skills/<category>/[<subcategory>/]<name>/`, Hermes Agent's layout); the
//! first skill of a name wins. The bundled ones (one per built-in command family) are compiled in and installed by
//! `lurkbot init`. A skill whose requirements are not met is unavailable, a malformed one
//! invalid — each with the reason — and neither keeps the others from loading. The prompt lists
//! the available ones; the model reads a SKILL.md itself.
//!
//! Two rules keep a skill from becoming a lasting prompt injection: a skill is offered only
//! when its text is the bundled one or one the owner approved (`approval.rs`; anything else
//! is `pending`), and no workspace skill takes the name of a bundled skill, which documents a
//! built-in command.

pub mod approval;
mod gate;
mod manifest;
mod read;
mod yaml;

use std::path::Path;

use lurkbot_core::{Config, Home, Secrets, layout};
use serde::Serialize;

pub use manifest::{Manifest, Requirements};

use crate::prompt::SkillEntry;

/// Where a skill comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillSource {
    /// `workspace/skills/`.
    Workspace,
    /// The home's `skills/`.
    Home,
    /// Compiled in (installed by `lurkbot init`).
    Bundled,
}

/// One skill as `lurkbot skills list --json` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    /// Its name (the folder's when it is invalid).
    pub name: String,
    /// What it is for (empty when invalid).
    pub description: String,
    /// Where it comes from.
    pub source: SkillSource,
    /// Its SKILL.md, home-relative.
    pub path: String,
    /// Whether the model is offered it.
    pub available: bool,
    /// Why not (`null` when available).
    pub reason: Option<String>,
    /// Waiting for the owner's `lurkbot skills approve NAME` (its text is not one they
    /// approved).
    pub pending: bool,
    /// What departs from agentskills.io's rules without keeping it from loading (`doctor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The SHA-256 of its SKILL.md (what `skills approve` records).
    #[serde(skip)]
    pub digest: String,
    /// What it needs (for `skills info`).
    #[serde(skip)]
    pub requires: Requirements,
}

/// The two folders searched, in precedence order.
const ROOTS: &[(&str, SkillSource)] = &[
    ("workspace/skills", SkillSource::Workspace),
    (layout::SKILLS, SkillSource::Home),
];

/// Every skill of the home, sorted by name: available, unavailable and invalid ones; a skill
/// shadowed by one of the same name found earlier is left out. Bundled skills are marked as
/// such when the home's copy is the one `init` installed, and listed as not installed when it
/// is missing.
pub fn discover(home: &Home, config: &Config) -> Vec<Skill> {
    let mut skills = found(home, config, &Secrets::load(home));
    let bundled = lurkbot_term::bundled_skills(&lurkbot_term::default_registry());
    for (path, content) in bundled.iter().filter(|(p, _)| p.ends_with("/SKILL.md")) {
        let name = path
            .trim_start_matches("skills/")
            .trim_end_matches("/SKILL.md");
        match skills
            .iter_mut()
            .find(|s| s.name == name && s.source != SkillSource::Workspace)
        {
            Some(skill) => {
                let same = std::fs::read_to_string(home.join(&skill.path))
                    .is_ok_and(|text| text == *content);
                if same && skill.source == SkillSource::Home {
                    skill.source = SkillSource::Bundled;
                }
            }
            None => skills.push(Skill {
                name: name.to_string(),
                description: String::new(),
                source: SkillSource::Bundled,
                path: path.clone(),
                available: false,
                reason: Some("not installed: `lurkbot init` installs it".into()),
                pending: false,
                note: None,
                digest: String::new(),
                requires: Requirements::default(),
            }),
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

/// The available skills, for the system prompt.
pub(crate) fn offered(home: &Home, config: &Config, secrets: &Secrets) -> Vec<SkillEntry> {
    found(home, config, secrets)
        .into_iter()
        .filter(|s| s.available)
        .map(|s| SkillEntry {
            name: s.name,
            description: s.description,
            location: s.path,
        })
        .collect()
}

/// The bundled skills' names and the digests of their texts, made once per process.
fn bundled() -> &'static [(String, String)] {
    static BUNDLED: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    BUNDLED.get_or_init(|| {
        lurkbot_term::bundled_skills(&lurkbot_term::default_registry())
            .iter()
            .filter_map(|(path, content)| {
                let name = path.strip_prefix("skills/")?.strip_suffix("/SKILL.md")?;
                Some((name.to_string(), approval::digest(content.as_bytes())))
            })
            .collect()
    })
}

/// The skills on disk, first of a name winning.
fn found(home: &Home, config: &Config, secrets: &Secrets) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    let check = gate::Check::new(config, secrets);
    let approved = approval::approved(home);
    for (root, source) in ROOTS {
        for (folder, rel) in skill_folders(&home.join(root), root) {
            let mut skill = load(home, &check, &folder, &rel, *source);
            let bundled_digest = bundled()
                .iter()
                .find(|(name, _)| *name == skill.name)
                .map(|(_, digest)| digest.as_str());
            let reserved = *source == SkillSource::Workspace && bundled_digest.is_some();
            if reserved {
                skill.available = false;
                skill.reason = Some(format!(
                    "invalid: '{}' is a bundled skill documenting a built-in command; a workspace skill never replaces it (rename this one)",
                    skill.name
                ));
            } else if !skill.digest.is_empty()
                && bundled_digest != Some(skill.digest.as_str())
                && approved.get(&skill.path) != Some(&skill.digest)
            {
                skill.pending = true;
                if skill.available {
                    skill.available = false;
                    skill.reason = Some(format!(
                        "pending: not approved by you in this version; read {} and run `lurkbot skills approve {}`",
                        skill.path, skill.name
                    ));
                }
            }
            // A refused workspace skill is listed, but the bundled one of its name still loads.
            let taken = skills.iter().any(|s| {
                s.name == skill.name
                    && !(s.source == SkillSource::Workspace && bundled_digest.is_some())
            });
            if reserved || !taken {
                skills.push(skill);
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

/// How deep skills may sit below a root: `name/`, `category/name/`,
/// `category/subcategory/name/` (Hermes Agent's `mlops/inference/vllm`).
const MAX_DEPTH: usize = 3;

/// `(folder name, home-relative SKILL.md path)` of every skill under `dir`: a folder holding a
/// SKILL.md is a skill (its own sub-folders are its files); one without is a category,
/// searched in turn, at most [`MAX_DEPTH`] levels down.
fn skill_folders(dir: &Path, rel: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    collect(dir, rel, 1, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, rel: &str, depth: usize, out: &mut Vec<(String, String)>) {
    for (name, path) in children(dir) {
        let inner = format!("{rel}/{name}");
        if path.join("SKILL.md").is_file() {
            out.push((name, format!("{inner}/SKILL.md")));
        } else if depth < MAX_DEPTH {
            collect(&path, &inner, depth + 1, out);
        }
    }
}

/// Sub-folders by name (hidden ones and `secrets` skipped; symlinks are not followed out).
fn children(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(name, _)| !name.starts_with('.') && name != "secrets")
        .collect()
}

fn load(
    home: &Home,
    check: &gate::Check<'_>,
    folder: &str,
    rel: &str,
    source: SkillSource,
) -> Skill {
    let read = read::read(home, rel, folder);
    let invalid = |reason: String| Skill {
        name: folder.to_string(),
        description: String::new(),
        source,
        path: rel.to_string(),
        available: false,
        reason: Some(format!("invalid: {reason}")),
        pending: false,
        note: None,
        digest: String::new(),
        requires: Requirements::default(),
    };
    match &read.manifest {
        Err(reason) => invalid(reason.clone()),
        Ok(m) => {
            let missing = check.missing(&m.name, &m.requires);
            Skill {
                name: m.name.clone(),
                description: m.description.clone(),
                source,
                path: rel.to_string(),
                available: missing.is_none(),
                reason: missing,
                pending: false,
                note: m.note.clone(),
                digest: read.digest.clone(),
                requires: m.requires.clone(),
            }
        }
    }
}
