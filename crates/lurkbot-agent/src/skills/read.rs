//! Reading a SKILL.md: through the protection model (a link to a secret or out of the home is
//! not read), capped in size, and once per change — the parsed manifest and the text's digest
//! are kept per file while its size and modification time stay the same, so a turn does not
//! read every skill again (a 30 MB SKILL.md was read on every turn before).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use lurkbot_core::Home;

use super::manifest::{self, Manifest};

/// Largest SKILL.md read (OpenClaw's skills are a few KiB; Hermes Agent's largest ~60 KiB).
pub(crate) const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// Files remembered at most (a home with more skills reads the rest each time).
const MAX_REMEMBERED: usize = 4096;

/// One SKILL.md as read.
#[derive(Debug)]
pub(crate) struct Read {
    /// The manifest, or why the skill is invalid.
    pub(crate) manifest: Result<Manifest, String>,
    /// The SHA-256 of the text (empty when it was not read).
    pub(crate) digest: String,
}

type Remembered = HashMap<PathBuf, (u64, Option<SystemTime>, Arc<Read>)>;

fn remembered() -> &'static Mutex<Remembered> {
    static CACHE: std::sync::OnceLock<Mutex<Remembered>> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The SKILL.md at `rel` (home-relative) in folder `folder`.
pub(crate) fn read(home: &Home, rel: &str, folder: &str) -> Arc<Read> {
    let invalid = |reason: String| {
        Arc::new(Read {
            manifest: Err(reason),
            digest: String::new(),
        })
    };
    let resolved = match home.resolve_readable(rel) {
        Ok(p) => p,
        Err(e) => return invalid(format!("SKILL.md is not readable here ({e})")),
    };
    let path = resolved.absolute().to_path_buf();
    let Ok(meta) = std::fs::metadata(&path) else {
        return invalid("SKILL.md is not readable".into());
    };
    if meta.len() > MAX_SKILL_BYTES {
        return invalid(format!(
            "SKILL.md has {} bytes, more than the {} KiB a skill may have",
            meta.len(),
            MAX_SKILL_BYTES / 1024
        ));
    }
    let modified = meta.modified().ok();
    if let Ok(cache) = remembered().lock()
        && let Some((len, time, read)) = cache.get(&path)
        && *len == meta.len()
        && *time == modified
    {
        return read.clone();
    }
    let bytes = match std::fs::read(&path) {
        Ok(b) if b.len() as u64 <= MAX_SKILL_BYTES => b,
        Ok(_) => return invalid("SKILL.md grew past the size a skill may have".into()),
        Err(e) => return invalid(format!("SKILL.md is not readable ({e})")),
    };
    let read = Arc::new(Read {
        manifest: match std::str::from_utf8(&bytes) {
            Ok(text) => manifest::parse(text, folder),
            Err(_) => Err("SKILL.md is not UTF-8 text".into()),
        },
        digest: super::approval::digest(&bytes),
    });
    if let Ok(mut cache) = remembered().lock() {
        if cache.len() >= MAX_REMEMBERED {
            cache.clear();
        }
        cache.insert(path, (meta.len(), modified, read.clone()));
    }
    read
}
