//! The `rss` state under `workspace/rss/`: `subscriptions.json` (the subscription list),
//! `fetch_state.json` (validators and the outcome of the last fetch, per name) and
//! `cache/<name>.json` (the items of the last successful fetch, which a 304 answers from).
//!
//! Every file is written atomically (temp file, fsync, rename), so a crash or a failed fetch
//! leaves the previous good file. Read-modify-write cycles hold an exclusive lock on
//! `workspace/rss/.lock`, so concurrent runs (two sessions of the gateway, a cron job and a
//! human) never lose each other's changes; the lock is never held across network I/O. A state
//! file that is not valid JSON is reported (`ParseError`) and left untouched for the user to fix.

use std::fs::File;
use std::path::PathBuf;

use lurkbot_core::{Home, layout};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::item::Item;

use crate::{CommandError, ErrorCode};

/// One entry of `subscriptions.json` (its documented fields).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct Subscription {
    /// Unique name: lower-case letters, digits and `-`.
    pub(super) name: String,
    /// The feed URL (http or https).
    pub(super) url: String,
    /// When the name was first added.
    pub(super) created_at_ms: u64,
    /// When the URL was last set.
    pub(super) updated_at_ms: u64,
}

/// One entry of `fetch_state.json`: the documented fields plus the URL the validators belong to and
/// the outcome of the last attempt.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct FetchState {
    /// The subscription name.
    pub(super) name: String,
    /// The URL fetched; validators are only reused for the same URL.
    #[serde(default)]
    pub(super) url: Option<String>,
    /// `ETag` of the last successful fetch.
    #[serde(default)]
    pub(super) etag: Option<String>,
    /// `Last-Modified` of the last successful fetch, verbatim.
    #[serde(default)]
    pub(super) last_modified: Option<String>,
    /// When the last attempt ended.
    #[serde(default)]
    pub(super) last_fetch_ms: Option<u64>,
    /// HTTP status of the last attempt (`null` when no answer came).
    #[serde(default)]
    pub(super) last_status: Option<u16>,
    /// Error code of the last attempt, `null` when it succeeded.
    #[serde(default)]
    pub(super) last_error_code: Option<String>,
    /// When the last successful fetch (200 or 304) ended.
    #[serde(default)]
    pub(super) last_success_ms: Option<u64>,
}

/// `cache/<name>.json`: the feed as of the last successful download.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct CachedFeed {
    /// The subscription name.
    pub(super) name: String,
    /// The URL it was fetched from.
    pub(super) url: String,
    /// When it was downloaded.
    pub(super) fetched_at_ms: u64,
    /// `rss0.9x`, `rss1.0`, `rss2.0`, `atom` or `json`.
    pub(super) format: String,
    /// The feed's title.
    pub(super) feed_title: Option<String>,
    /// The feed's web page.
    pub(super) feed_link: Option<String>,
    /// Every item, in feed order.
    pub(super) items: Vec<Item>,
}

/// The state folder, with its lock held for as long as this value lives.
pub(super) struct RssStore {
    dir: PathBuf,
    shown: String,
    _lock: File,
}

const SUBSCRIPTIONS: &str = "subscriptions.json";
const FETCH_STATE: &str = "fetch_state.json";
const CACHE: &str = "cache";

impl RssStore {
    /// Opens `workspace/rss/` (created when missing) and takes its lock.
    ///
    /// # Errors
    /// `IoError` when the folder or lock file cannot be created or locked.
    pub(super) fn lock(home: &Home) -> Result<Self, CommandError> {
        let dir = home.join(layout::RSS);
        std::fs::create_dir_all(dir.join(CACHE))
            .map_err(|e| CommandError::io("create", layout::RSS, &e))?;
        let lock_path = dir.join(".lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| CommandError::io("open", &format!("{}/.lock", layout::RSS), &e))?;
        lock.lock()
            .map_err(|e| CommandError::io("lock", &format!("{}/.lock", layout::RSS), &e))?;
        Ok(Self {
            dir,
            shown: layout::RSS.to_string(),
            _lock: lock,
        })
    }

    /// The subscriptions, in the file's order (empty when the file does not exist yet).
    ///
    /// # Errors
    /// `IoError`, or `ParseError` for a file that is not a valid subscription list.
    pub(super) fn subscriptions(&self) -> Result<Vec<Subscription>, CommandError> {
        self.read_json(SUBSCRIPTIONS)
    }

    /// Replaces `subscriptions.json`.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn save_subscriptions(&self, subs: &[Subscription]) -> Result<(), CommandError> {
        self.write_json(SUBSCRIPTIONS, &subs)
    }

    /// Every fetch state.
    ///
    /// # Errors
    /// `IoError`, or `ParseError` for a malformed file.
    pub(super) fn states(&self) -> Result<Vec<FetchState>, CommandError> {
        self.read_json(FETCH_STATE)
    }

    /// The fetch state of `name`, if any.
    ///
    /// # Errors
    /// Those of [`RssStore::states`].
    pub(super) fn state(&self, name: &str) -> Result<Option<FetchState>, CommandError> {
        Ok(self.states()?.into_iter().find(|s| s.name == name))
    }

    /// Inserts or replaces the state of `state.name`.
    ///
    /// # Errors
    /// Those of reading and writing `fetch_state.json`.
    pub(super) fn put_state(&self, state: FetchState) -> Result<(), CommandError> {
        let mut states = self.states()?;
        match states.iter_mut().find(|s| s.name == state.name) {
            Some(slot) => *slot = state,
            None => states.push(state),
        }
        states.sort_by(|a, b| a.name.cmp(&b.name));
        self.write_json(FETCH_STATE, &states)
    }

    /// Removes the state and cached items of `name` (nothing to do when there are none).
    ///
    /// # Errors
    /// Those of reading and writing `fetch_state.json`, or removing the cache file.
    pub(super) fn forget(&self, name: &str) -> Result<(), CommandError> {
        let mut states = self.states()?;
        let before = states.len();
        states.retain(|s| s.name != name);
        if states.len() != before {
            self.write_json(FETCH_STATE, &states)?;
        }
        let cache = self.cache_path(name);
        match std::fs::remove_file(&cache) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(CommandError::io("remove", &self.shown_cache(name), &e)),
        }
    }

    /// The cached feed of `name`; `None` when there is none or it cannot be read (a cache is
    /// only an optimisation: an unreadable one means downloading the feed again).
    pub(super) fn cache(&self, name: &str) -> Option<CachedFeed> {
        let bytes = std::fs::read(self.cache_path(name)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Replaces the cached feed of `feed.name`.
    ///
    /// # Errors
    /// `IoError`.
    pub(super) fn save_cache(&self, feed: &CachedFeed) -> Result<(), CommandError> {
        self.write_json(&format!("{CACHE}/{}.json", feed.name), feed)
    }

    /// `workspace/rss/cache/<name>.json`, home-relative, for messages and results.
    pub(super) fn shown_cache(&self, name: &str) -> String {
        format!("{}/{CACHE}/{name}.json", self.shown)
    }

    fn cache_path(&self, name: &str) -> PathBuf {
        self.dir.join(CACHE).join(format!("{name}.json"))
    }

    fn read_json<T: DeserializeOwned + Default>(&self, file: &str) -> Result<T, CommandError> {
        let path = self.dir.join(file);
        let shown = format!("{}/{file}", self.shown);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
            Err(e) => return Err(CommandError::io("read", &shown, &e)),
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(T::default());
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            CommandError::new(ErrorCode::ParseError, format!("{shown} is not valid: {e}"))
                .with_hint(format!(
                    "fix {shown} by hand (it was left as it is), or move it away to start afresh"
                ))
        })
    }

    fn write_json<T: Serialize + ?Sized>(&self, file: &str, value: &T) -> Result<(), CommandError> {
        let shown = format!("{}/{file}", self.shown);
        // Streamed into the temporary file: a large cache is never held as one buffer.
        lurkbot_core::write_atomic_streamed(&self.dir.join(file), &mut |w| {
            serde_json::to_writer_pretty(&mut *w, value).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        })
        .map_err(|e| {
            CommandError::new(ErrorCode::IoError, format!("cannot write {shown}: {e}"))
                .with_hint("check free space and permissions, then retry")
        })
    }
}
