//! Skills the admin shares with every user of a shared gateway (ARCHITECTURE.md §6.2):
//! `[users] shared_skills` names skills of the gateway's own home (`["*"]`: all of them) that
//! the owner approved there. Each is copied into every user's home — its folder under `skills/`
//! except `secrets/` (credentials stay each user's own) and links — and recorded approved
//! there, as the admin's approval stands for the users. The copy is the admin's: a user's
//! change to it makes its text one nobody approved, so it is not offered until the next copy
//! puts the admin's back (when the user's state is made and at every reload). A user's own
//! skill of the same name is replaced.

use std::path::Path;

use lurkbot_agent::skills::{Skill, SkillSource};
use lurkbot_core::{Config, Home};

/// Most bytes one shared skill's folder may hold (larger ones are not shared, and say so).
const MAX_SKILL_FOLDER_BYTES: u64 = 16 * 1024 * 1024;
/// Most files one shared skill's folder may hold.
const MAX_SKILL_FOLDER_FILES: usize = 1000;

/// Copies the shared skills of `gateway` into the user's home `user`; problems are logged.
pub(crate) fn share(gateway: &Home, user: &Home, config: &Config) {
    let wanted = &config.users.shared_skills;
    if wanted.is_empty() {
        return;
    }
    let all = wanted.iter().any(|w| w == "*");
    let skills = lurkbot_agent::skills::discover(gateway, config);
    for skill in skills.iter().filter(|s| shareable(s, all, wanted)) {
        if let Err(e) = copy_one(gateway, user, skill) {
            tracing::warn!(skill = skill.name, error = %e, "users: a shared skill was not copied");
        }
    }
}

/// Whether `skill` is asked for and the owner's to share: installed in the gateway's home (not
/// its workspace), valid, and approved (or bundled).
fn shareable(skill: &Skill, all: bool, wanted: &[String]) -> bool {
    (all || wanted.contains(&skill.name))
        && matches!(skill.source, SkillSource::Home | SkillSource::Bundled)
        && !skill.pending
        && !skill.digest.is_empty()
}

fn copy_one(gateway: &Home, user: &Home, skill: &Skill) -> Result<(), String> {
    let folder = skill
        .path
        .strip_suffix("/SKILL.md")
        .ok_or("its SKILL.md is not at the top of its folder")?;
    let from = gateway
        .resolve_under(lurkbot_core::layout::SKILLS, &skill.path)
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or("its folder is not under the gateway's skills/")?;
    let mut files = Vec::new();
    let mut bytes = 0u64;
    collect(gateway, &from, "", &mut files, &mut bytes)?;
    for (rel, content) in files {
        // Where the copy lands is what the path resolves to in the user's home, as for every
        // writer: a link the user planted in their `skills/` cannot send it elsewhere.
        let to = user
            .resolve_under(folder, &format!("{folder}/{rel}"))
            .filter(|to| user.protection(to).writable())
            .ok_or_else(|| format!("{folder}/{rel} in the user's home leads elsewhere"))?;
        if std::fs::read(&to).is_ok_and(|have| have == content) {
            continue;
        }
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        lurkbot_core::write_atomic_with_mode(&to, &content, 0o600).map_err(|e| e.to_string())?;
    }
    lurkbot_agent::skills::approval::approve(user, &skill.path, &skill.digest)
        .map_err(|e| e.to_string())
}

/// Every plain file under `dir` (relative to the skill's folder) the protection model lets a
/// tool read — so not `secrets/`, no `.env` — and no link.
fn collect(
    gateway: &Home,
    dir: &Path,
    prefix: &str,
    files: &mut Vec<(String, Vec<u8>)>,
    bytes: &mut u64,
) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        let rel = format!("{prefix}{name}");
        if kind.is_symlink() || !gateway.protection(&entry.path()).readable() {
            continue;
        }
        if kind.is_dir() {
            collect(gateway, &entry.path(), &format!("{rel}/"), files, bytes)?;
        } else if kind.is_file() {
            let content = std::fs::read(entry.path()).map_err(|e| e.to_string())?;
            *bytes += content.len() as u64;
            files.push((rel, content));
            if *bytes > MAX_SKILL_FOLDER_BYTES || files.len() > MAX_SKILL_FOLDER_FILES {
                return Err(format!(
                    "its folder holds more than {} MiB or {MAX_SKILL_FOLDER_FILES} files",
                    MAX_SKILL_FOLDER_BYTES / (1024 * 1024)
                ));
            }
        }
    }
    Ok(())
}
