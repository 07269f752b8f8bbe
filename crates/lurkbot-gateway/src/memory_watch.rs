//! Keeping the memory index fresh while the gateway runs (ARCHITECTURE.md §7): every 2 s the
//! watcher looks at the memory files' names, sizes and modification times (a few `stat` calls,
//! no dependency, and it works on every filesystem, network mounts included); a change is
//! indexed once the files have stayed the same for one look (the debounce, so an editor's
//! burst of writes is indexed once), then `memory.indexed` is emitted. The first look after
//! start indexes what changed while the gateway was down. `[memory] watch = false` stops it.

use std::time::{Duration, SystemTime};

use lurkbot_core::{Home, layout};

use crate::protocol::Event;
use crate::state::AppState;

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

/// Starts the watcher; it runs until the gateway stops (the caller aborts it).
pub(crate) fn start(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut seen: Option<Fingerprint> = None;
        let mut indexed: Option<Fingerprint> = None;
        loop {
            let config = state.config();
            if config.memory.watch {
                let now = fingerprint(&state.home);
                let stable = seen.as_ref() == Some(&now);
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
