//! What a mail reply needs to stay in its thread — the subject and `References` of each mail
//! read, by `Message-ID` — kept in memory and written to `channels/email/threads.json` with the
//! reading position (once the mails are recorded), so a reply made after a restart is threaded
//! like one made before.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Most threads remembered.
const MAX_THREADS: usize = 1000;

/// One mail's thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Thread {
    pub(crate) subject: String,
    pub(crate) references: String,
}

/// The threads of the mails read, by `Message-ID`.
pub(crate) struct Threads {
    path: PathBuf,
    known: Mutex<HashMap<String, Thread>>,
}

impl Threads {
    /// The threads kept in `path` (none when it is missing or unreadable).
    pub(crate) fn open(path: PathBuf) -> Self {
        let known = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Self {
            path,
            known: Mutex::new(known),
        }
    }

    /// Remembers the thread of mail `id` (the oldest half goes when the map is full).
    pub(crate) fn insert(&self, id: String, thread: Thread) {
        if let Ok(mut known) = self.known.lock() {
            if known.len() >= MAX_THREADS {
                known.clear();
            }
            known.insert(id, thread);
        }
    }

    /// The thread of mail `id`, if it was read.
    pub(crate) fn get(&self, id: &str) -> Option<Thread> {
        self.known.lock().ok().and_then(|k| k.get(id).cloned())
    }

    /// Writes them (private, atomically).
    pub(crate) fn persist(&self) {
        let Ok(bytes) = self.known.lock().map(|k| serde_json::to_vec(&*k)) else {
            return;
        };
        let Ok(bytes) = bytes else {
            return;
        };
        if let Some(dir) = self.path.parent()
            && let Err(e) = lurkbot_core::create_private_dir(dir)
        {
            tracing::warn!(error = %e, "mail threads not saved");
            return;
        }
        if let Err(e) = lurkbot_core::write_atomic_with_mode(&self.path, &bytes, 0o600) {
            tracing::warn!(error = %e, "mail threads not saved: replies after a restart start new threads");
        }
    }
}
