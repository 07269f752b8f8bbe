//! Keeping the memory index fresh while the gateway runs (ARCHITECTURE.md §7): every 2 s the
//! watcher looks at the memory files' names, sizes and modification times (a few `stat` calls,
//! no dependency, and it works on every filesystem, network mounts included); a change is
//! indexed once the files have stayed the same for one look (the debounce, so an editor's
//! burst of writes is indexed once), then `memory.indexed` is emitted. The first look after
//! start indexes what changed while the gateway was down; when `memory/index.sqlite` is newer
//! than every memory file and than the `memory/` folder (a deletion changes the folder), nothing
//! did, and the index is not opened (an idle gateway never loads SQLite; a file restored with an
//! old modification time is picked up by the next search, which brings the index up to date
//! first). `[memory] watch = false` stops it.

use std::time::{Duration, SystemTime};

use lurkbot_core::{Home, layout};

use crate::protocol::Event;
use crate::turns::host::SessionHost;

/// Time between looks.
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// What the watcher compares: each memory file's path, size and modification time.
type Fingerprint = Vec<(String, u64, Option<SystemTime>)>;

fn fingerprint(home: &Home) -> Fingerprint {
    let workspace = home.join(layout::WORKSPACE);
    let stat = |rel: String| {
        let meta = std::fs::symlink_metadata(workspace.join(&rel)).ok()?;
        meta.is_file()
            .then(|| (rel, meta.len(), meta.modified().ok()))
    };
    let mut files: Fingerprint = stat("MEMORY.md".into()).into_iter().collect();
    if let Ok(entries) = std::fs::read_dir(workspace.join("memory")) {
        let mut daily: Fingerprint = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".md"))
            .filter_map(|name| stat(format!("memory/{name}")))
            .collect();
        daily.sort();
        files.extend(daily);
    }
    files
}

/// Whether `memory/index.sqlite` was written after every file of `files` and after the last
/// change to the `memory/` folder's entries (the index is written when it changes, and only
/// then).
fn index_is_current(home: &Home, files: &Fingerprint) -> bool {
    let modified = |path: std::path::PathBuf| std::fs::metadata(path).ok()?.modified().ok();
    let Some(index) = modified(lurkbot_memory::index_path(home)) else {
        return false;
    };
    let folder = modified(home.join(layout::WORKSPACE).join("memory"));
    files
        .iter()
        .map(|(_, _, time)| *time)
        .chain(std::iter::once(folder))
        .all(|time| time.is_none_or(|t| t < index))
        && files.iter().all(|(_, _, time)| time.is_some())
}

/// Starts the watcher; it runs until the gateway stops (the caller aborts it).
pub(crate) fn start(state: std::sync::Arc<SessionHost>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut seen: Option<Fingerprint> = None;
        let mut indexed: Option<Fingerprint> = None;
        loop {
            let config = state.config();
            if config.memory.watch {
                let now = fingerprint(&state.home);
                let stable = seen.as_ref() == Some(&now);
                if stable && indexed.is_none() && index_is_current(&state.home, &now) {
                    indexed = Some(now.clone());
                }
                if stable && indexed.as_ref() != Some(&now) {
                    let vars = lurkbot_agent::setup::variables(&state.home);
                    match lurkbot_memory::reindex(&state.home, &config.memory, &vars, false).await {
                        Ok(report) => {
                            tracing::info!(
                                files = report.files,
                                chunks = report.chunks,
                                embedded = report.embedded,
                                "memory re-indexed"
                            );
                            state.hub.emit(Event::MemoryIndexed(report));
                        }
                        // The keyword index is written even when the embedder fails; the next
                        // change (or search) tries the embedder again.
                        Err(e) => tracing::warn!("memory re-index: {e}"),
                    }
                    indexed = Some(now.clone());
                }
                seen = Some(now);
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    fn set_time(path: &std::path::Path, time: SystemTime) {
        let file = std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("{e}"));
        file.set_modified(time).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn the_index_is_current_only_when_newer_than_every_file_and_the_folder() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let daily = home.join(layout::WORKSPACE).join("memory");
        std::fs::create_dir_all(&daily).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(home.join(layout::MEMORY)).unwrap_or_else(|e| panic!("{e}"));
        let note = daily.join("2026-11-24.md");
        std::fs::write(&note, "a note\n").unwrap_or_else(|e| panic!("{e}"));
        set_time(&note, base);
        // No index yet: not current.
        assert!(!index_is_current(&home, &fingerprint(&home)));

        let index = home.join(layout::MEMORY).join("index.sqlite");
        std::fs::write(&index, "").unwrap_or_else(|e| panic!("{e}"));
        // The folder was changed when the note was created (now, after `base`).
        set_time(&index, SystemTime::now() + Duration::from_secs(60));
        assert!(index_is_current(&home, &fingerprint(&home)));

        // A note edited after the index was written.
        set_time(&note, SystemTime::now() + Duration::from_secs(120));
        assert!(!index_is_current(&home, &fingerprint(&home)));
        set_time(&note, base);
        assert!(index_is_current(&home, &fingerprint(&home)));

        // A note deleted after the index was written: only the folder says so.
        set_time(&index, base + Duration::from_secs(1));
        std::fs::remove_file(&note).unwrap_or_else(|e| panic!("{e}"));
        assert!(fingerprint(&home).is_empty());
        assert!(!index_is_current(&home, &fingerprint(&home)));
    }
}
