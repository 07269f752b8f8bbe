//! Which homes of this process keep their shared state in a PostgreSQL store (ARCHITECTURE.md
//! §6.3): the usage records and budget holds (`usage::Ledger`), the cron jobs and their runs
//! (`cron::CronStore`), the users of a shared gateway (`lurkbot_gateway::users::UserStore`). A home is registered when its store is opened
//! ([`crate::setup::open_state`]) and stays registered while the store is open — the registry
//! holds no store open itself, so a gateway that stops closes its connection.

use std::sync::Mutex;

use lurkbot_core::Home;
use lurkbot_state::{Store, WeakStore};

static SHARED: Mutex<Vec<(std::path::PathBuf, WeakStore)>> = Mutex::new(Vec::new());

fn lock() -> std::sync::MutexGuard<'static, Vec<(std::path::PathBuf, WeakStore)>> {
    SHARED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Keeps `home`'s shared state in `store` while it is open.
pub fn share(home: &Home, store: &Store) {
    let mut shared = lock();
    shared.retain(|(root, weak)| root != home.root() && weak.upgrade().is_some());
    shared.push((home.root().to_path_buf(), store.downgrade()));
}

/// The store `home`'s shared state is in, if it is in one and the store is open.
pub fn of(home: &Home) -> Option<Store> {
    lock()
        .iter()
        .find(|(root, _)| root == home.root())
        .and_then(|(_, weak)| weak.upgrade())
}

/// The documents that move with the state (`state migrate`): paths in the home.
const DOCUMENTS: [&str; 2] = ["cron/jobs.json", "users/users.json"];
/// The folders of logs that move with it: each `*.jsonl` in them.
const LOG_DIRS: [&str; 1] = ["cron/runs"];

/// Whether `name` (from a store) is one of the files that move with the state — a path the
/// home's files may be written at: a listed document, or a log with a plain name in a listed
/// folder.
fn movable(name: &str) -> bool {
    DOCUMENTS.contains(&name)
        || LOG_DIRS.iter().any(|dir| {
            name.strip_prefix(dir)
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|file| file.strip_suffix(".jsonl"))
                .is_some_and(|id| {
                    !id.is_empty()
                        && id
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                })
        })
}

fn logs_in(home: &Home) -> Vec<String> {
    let mut logs = Vec::new();
    for dir in LOG_DIRS {
        let Ok(entries) = std::fs::read_dir(home.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = format!("{dir}/{}", entry.file_name().to_string_lossy());
            if movable(&name) {
                logs.push(name);
            }
        }
    }
    logs.sort();
    logs
}

/// What the home's files hold of the state that moves with it: its usage records, documents
/// and logs (`state migrate` into PostgreSQL).
pub fn home_files(home: &Home) -> lurkbot_state::HomeFiles {
    let documents = DOCUMENTS
        .iter()
        .filter_map(|name| {
            Some((
                name.to_string(),
                std::fs::read_to_string(home.join(name)).ok()?,
            ))
        })
        .collect();
    let logs = logs_in(home)
        .into_iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(home.join(&name)).ok()?;
            let lines = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect();
            Some((name, lines))
        })
        .collect();
    lurkbot_state::HomeFiles {
        usage: crate::usage::file_records(home),
        documents,
        logs,
    }
}

/// Which of those files the home has (`state migrate` back into the home needs none of them:
/// the database's replace them).
pub fn files_present(home: &Home) -> Vec<String> {
    let mut present: Vec<String> = DOCUMENTS
        .iter()
        .filter(|name| home.join(name).exists())
        .map(|name| name.to_string())
        .collect();
    present.extend(logs_in(home));
    if crate::usage::has_files(home) {
        present.push(format!("{}/*.jsonl", crate::usage::USAGE_DIR));
    }
    present
}

/// Writes `files` as the home's files, each whole and atomically (`state migrate` back into
/// the home; the usage records in the months of `zone`). A name that is not one of the files
/// that move is refused.
///
/// # Errors
/// A file failing, or a name refused.
pub fn write_home_files(
    home: &Home,
    zone: &lurkbot_core::Zone,
    files: &lurkbot_state::HomeFiles,
) -> Result<(), lurkbot_core::CoreError> {
    let mut whole: Vec<(&str, String)> = files
        .documents
        .iter()
        .map(|(name, body)| (name.as_str(), body.clone()))
        .collect();
    whole.extend(files.logs.iter().map(|(name, lines)| {
        let mut text = lines.join("\n");
        text.push('\n');
        (name.as_str(), text)
    }));
    if let Some((name, _)) = whole.iter().find(|(name, _)| !movable(name)) {
        return Err(lurkbot_core::CoreError::Invalid(format!(
            "the store names '{name}', which is not a file of the home's state: nothing written"
        )));
    }
    for (name, text) in whole {
        let path = home.join(name);
        if let Some(dir) = path.parent() {
            lurkbot_core::create_private_dir(dir)?;
        }
        lurkbot_core::write_atomic(&path, text.as_bytes())?;
    }
    crate::usage::write_files(home, zone, &files.usage)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::movable;

    #[test]
    fn only_the_files_that_move_may_be_written() {
        assert!(movable("cron/jobs.json"));
        assert!(movable("users/users.json"));
        assert!(movable("cron/runs/cron_0a1b.jsonl"));
        for name in [
            "cron/runs/../../.env",
            "cron/runs/.jsonl",
            "cron/runs/a/b.jsonl",
            "config.toml",
            "/etc/passwd",
            "cron/runs/x.json",
        ] {
            assert!(!movable(name), "{name}");
        }
    }
}
