//! The home's state in a PostgreSQL store (ARCHITECTURE.md §6.3): which homes keep it there is
//! `lurkbot_state::shared` (re-exported here: [`share`], [`of`]), asked by every reader of the
//! files that move there — sessions and transcripts, usage records and budget holds, cron jobs
//! and runs, users, pairings, devices. What follows lists those files for `state migrate`.

use lurkbot_core::Home;

pub use lurkbot_state::shared::{of, share};

/// The documents that move with the state (`state migrate`), as paths in the home; `*` is one
/// plain name (an agent's id).
const DOCUMENTS: [&str; 6] = [
    "exec-approvals.json",
    "cron/jobs.json",
    "users/users.json",
    "sessions/*/sessions.json",
    "channels/pairing.json",
    "devices/paired.json",
];
/// The folders of logs that move with it (each `*.jsonl` in them), the same way.
const LOG_DIRS: [&str; 2] = ["cron/runs", "sessions/*"];

/// A plain name: letters, digits, `_` and `-` (no `.`, no `/`).
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `name` matches `pattern` segment by segment (`*`: a plain name).
fn matches(pattern: &str, name: &str) -> bool {
    let (mut p, mut n) = (pattern.split('/'), name.split('/'));
    loop {
        match (p.next(), n.next()) {
            (None, None) => return true,
            (Some("*"), Some(seg)) if plain(seg) => {}
            (Some(want), Some(seg)) if want == seg => {}
            _ => return false,
        }
    }
}

/// Whether `name` (from a store) is one of the files that move with the state — a path the
/// home's files may be written at: a listed document, or a log with a plain name in a listed
/// folder.
fn movable(name: &str) -> bool {
    DOCUMENTS.iter().any(|d| matches(d, name))
        || LOG_DIRS.iter().any(|dir| {
            name.rsplit_once('/').is_some_and(|(folder, file)| {
                matches(dir, folder) && file.strip_suffix(".jsonl").is_some_and(plain)
            })
        })
}

/// The paths in the home matching `pattern` (`*` segments expanded over the folders there).
fn expand(home: &Home, pattern: &str) -> Vec<String> {
    let mut found = vec![String::new()];
    for seg in pattern.split('/') {
        let mut next = Vec::new();
        for base in &found {
            let join = |s: &str| {
                if base.is_empty() {
                    s.to_string()
                } else {
                    format!("{base}/{s}")
                }
            };
            if seg == "*" {
                let Ok(entries) = std::fs::read_dir(home.join(base)) else {
                    continue;
                };
                next.extend(
                    entries
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|s| plain(s))
                        .map(|s| join(&s)),
                );
            } else {
                next.push(join(seg));
            }
        }
        found = next;
    }
    found.sort();
    found
}

/// Where `name` is in the home, resolved as every reader resolves it (ARCHITECTURE.md §4.4):
/// links followed, confined to the home, and under the name's own top folder — a link planted
/// in `sessions/` that points at `.env` is not a transcript.
fn placed(home: &Home, name: &str) -> Option<std::path::PathBuf> {
    match name.split_once('/') {
        Some((top, _)) => home.resolve_under(top, name),
        None => home
            .resolve(name)
            .ok()
            .map(|path| path.absolute().to_path_buf()),
    }
}

fn documents_in(home: &Home) -> Vec<String> {
    DOCUMENTS
        .iter()
        .flat_map(|pattern| expand(home, pattern))
        .filter(|name| placed(home, name).is_some_and(|p| p.is_file()))
        .collect()
}

fn logs_in(home: &Home) -> Vec<String> {
    let mut logs = Vec::new();
    for dir in LOG_DIRS.iter().flat_map(|pattern| expand(home, pattern)) {
        let Ok(entries) = std::fs::read_dir(home.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            let name = format!("{dir}/{file}");
            if file.strip_suffix(".jsonl").is_some_and(plain)
                && placed(home, &name).is_some_and(|p| p.is_file())
            {
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
    let documents = documents_in(home)
        .into_iter()
        .filter_map(|name| {
            let body = std::fs::read_to_string(placed(home, &name)?).ok()?;
            Some((name, body))
        })
        .collect();
    let logs = logs_in(home)
        .into_iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(placed(home, &name)?).ok()?;
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
    let mut present = documents_in(home);
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
        let Some(path) = placed(home, name) else {
            return Err(lurkbot_core::CoreError::Invalid(format!(
                "{name} leads out of the home (a link?): not written"
            )));
        };
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
    fn the_files_that_move_are_found_in_the_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = lurkbot_core::Home::open(dir.path()).expect("home");
        for (name, text) in [
            ("sessions/main/sessions.json", "{}"),
            ("sessions/main/ses_0123.jsonl", "{}\n{}\n"),
            ("cron/jobs.json", "{}"),
            ("sessions/main/notes.txt", "not moved"),
        ] {
            let path = home.join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(path, text).expect("write");
        }
        // A link planted among the transcripts that leads out of the home is not read.
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let outside = elsewhere.path().join("secret.jsonl");
        std::fs::write(&outside, "{\"secret\":1}\n").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, home.join("sessions/main/ses_link.jsonl"))
            .expect("link");
        let files = super::home_files(&home);
        let documents: Vec<&str> = files.documents.iter().map(|d| d.0.as_str()).collect();
        assert_eq!(documents, ["cron/jobs.json", "sessions/main/sessions.json"]);
        let logs: Vec<(&str, usize)> = files
            .logs
            .iter()
            .map(|(name, lines)| (name.as_str(), lines.len()))
            .collect();
        assert_eq!(logs, [("sessions/main/ses_0123.jsonl", 2)]);
    }

    /// Written back only inside the home: a session folder that is a link to elsewhere is
    /// refused, and nothing lands there; a name that is not one of the state's files too.
    #[cfg(unix)]
    #[test]
    fn writing_back_follows_no_link_out_of_the_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = lurkbot_core::Home::open(dir.path()).expect("home");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(home.join("sessions")).expect("dir");
        std::os::unix::fs::symlink(elsewhere.path(), home.join("sessions/main")).expect("link");
        let files = lurkbot_state::HomeFiles {
            documents: vec![("sessions/main/sessions.json".into(), "{}".into())],
            ..lurkbot_state::HomeFiles::default()
        };
        let refused = super::write_home_files(&home, &lurkbot_core::Zone::utc(), &files)
            .expect_err("a link out of the home");
        assert!(
            refused.to_string().contains("leads out of the home"),
            "{refused}"
        );
        assert_eq!(std::fs::read_dir(elsewhere.path()).expect("dir").count(), 0);
        let stranger = lurkbot_state::HomeFiles {
            documents: vec![("config.toml".into(), "[gateway]".into())],
            ..lurkbot_state::HomeFiles::default()
        };
        let refused = super::write_home_files(&home, &lurkbot_core::Zone::utc(), &stranger)
            .expect_err("not a state file");
        assert!(refused.to_string().contains("nothing written"), "{refused}");
        assert!(!home.join("config.toml").exists());
    }

    #[test]
    fn only_the_files_that_move_may_be_written() {
        assert!(movable("cron/jobs.json"));
        assert!(movable("users/users.json"));
        assert!(movable("channels/pairing.json"));
        assert!(movable("exec-approvals.json"));
        assert!(movable("devices/paired.json"));
        assert!(movable("sessions/main/sessions.json"));
        assert!(movable("sessions/main/ses_0123abcd.jsonl"));
        assert!(!movable("sessions/../sessions.json"));
        assert!(!movable("sessions/main/x/y.jsonl"));
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
