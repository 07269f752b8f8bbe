//! Removing temporary files that a killed process left behind (ARCHITECTURE.md §4.6): the atomic
//! writers' `.<name>.tmp-*` copies, archive creation's `.lurkbot-new-*` files and extraction's
//! `.lurkbot-extract-*` staging folders, once they are older than an hour (a live writer keeps
//! touching its file, and no write takes an hour).

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::Home;
use crate::protection::is_temp_name;

/// How old a temporary file must be before it counts as abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(3600);
/// Most directory entries looked at in one sweep (a huge workspace is not walked whole).
const SWEEP_LIMIT: usize = 50_000;

/// What a sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Files and staging folders removed.
    pub removed: u64,
    /// Bytes freed (files only).
    pub bytes: u64,
}

/// Removes the abandoned temporary files of the whole home (symbolic links are not followed).
pub fn sweep_stale_temp(home: &Home) -> Sweep {
    sweep_stale_temp_at(home, SystemTime::now())
}

/// [`sweep_stale_temp`] as if the time were `now` (for tests).
pub fn sweep_stale_temp_at(home: &Home, now: SystemTime) -> Sweep {
    let mut sweep = Sweep::default();
    let mut seen = 0usize;
    let mut stack = vec![home.root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > SWEEP_LIMIT {
                return sweep;
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            let name = entry.file_name();
            let temp = is_temp_name(&name.to_string_lossy());
            if meta.is_dir() && !meta.file_type().is_symlink() {
                if temp && is_stale(&meta, now) {
                    if std::fs::remove_dir_all(entry.path()).is_ok() {
                        sweep.removed += 1;
                    }
                } else {
                    stack.push(entry.path());
                }
            } else if meta.is_file() && temp && is_stale(&meta, now) {
                remove_file(&entry.path(), meta.len(), &mut sweep);
            }
        }
    }
    sweep
}

/// Removes the abandoned temporary files directly inside `dir` (not below it): what a writer
/// calls before it makes a new temporary file there.
pub fn sweep_stale_temp_in(dir: &Path) -> Sweep {
    let mut sweep = Sweep::default();
    let now = SystemTime::now();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return sweep;
    };
    for entry in entries.flatten() {
        if !is_temp_name(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !is_stale(&meta, now) {
            continue;
        }
        if meta.is_dir() {
            if std::fs::remove_dir_all(entry.path()).is_ok() {
                sweep.removed += 1;
            }
        } else if meta.is_file() {
            remove_file(&entry.path(), meta.len(), &mut sweep);
        }
    }
    sweep
}

fn is_stale(meta: &std::fs::Metadata, now: SystemTime) -> bool {
    meta.modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .is_some_and(|age| age >= STALE_AFTER)
}

fn remove_file(path: &Path, len: u64, sweep: &mut Sweep) {
    if std::fs::remove_file(path).is_ok() {
        sweep.removed += 1;
        sweep.bytes += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_old_temporary_files() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let home = Home::open(dir.path())?;
        std::fs::create_dir_all(home.join("workspace/.lurkbot-extract-abc"))?;
        std::fs::write(home.join("workspace/.lurkbot-extract-abc/0"), "x")?;
        std::fs::write(home.join(".config.toml.tmp-1a2b"), "token")?;
        std::fs::write(home.join("artifacts.lurkbot"), "kept")?;
        std::fs::create_dir_all(home.join("artifacts"))?;
        std::fs::write(home.join("artifacts/.lurkbot-new-x"), "12345")?;
        std::fs::write(home.join("artifacts/list.json"), "kept")?;
        assert_eq!(
            sweep_stale_temp(&home),
            Sweep::default(),
            "fresh files stay"
        );
        let later = SystemTime::now() + STALE_AFTER + Duration::from_secs(5);
        let sweep = sweep_stale_temp_at(&home, later);
        assert_eq!(sweep.removed, 3);
        assert!(!home.join(".config.toml.tmp-1a2b").exists());
        assert!(!home.join("workspace/.lurkbot-extract-abc").exists());
        assert!(home.join("artifacts/list.json").exists());
        assert!(home.join("artifacts.lurkbot").exists());
        Ok(())
    }

    #[test]
    fn one_folder_sweep_keeps_fresh_and_foreign_files() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let old = dir.path().join(".lurkbot-new-abc");
        std::fs::write(&old, "partial archive")?;
        std::fs::File::options()
            .write(true)
            .open(&old)?
            .set_modified(SystemTime::now() - STALE_AFTER - Duration::from_secs(60))?;
        std::fs::write(dir.path().join(".lurkbot-new-fresh"), "in use")?;
        std::fs::write(dir.path().join("keep.zip"), "mine")?;
        let sweep = sweep_stale_temp_in(dir.path());
        assert_eq!(sweep.removed, 1);
        assert!(!old.exists());
        assert!(dir.path().join(".lurkbot-new-fresh").exists());
        assert!(dir.path().join("keep.zip").exists());
        Ok(())
    }
}
