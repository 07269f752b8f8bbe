//! Sessions and their transcripts (ARCHITECTURE.md §5): `sessions/<agentId>/sessions.json` maps each
//! session key to its current session (`ses_` + 12 hex) and counters; `<sessionId>.jsonl` holds
//! one entry per message, tool call, tool result or compaction summary, appended and flushed to
//! disk at the end of every step, so a crash loses at most the step in flight. A torn last line
//! (a crash mid-write) is ignored on read, and tool calls left without results are answered
//! with an "interrupted" result so the conversation stays valid for the provider.
//!
//! With the state in PostgreSQL ([`crate::shared_state`]) the index and transcripts are the
//! store's document and logs of the same names, a log measured in bytes as its file would be.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

use lurkbot_core::{Home, SessionKey, layout};
use lurkbot_llm::{Message, Usage};
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

pub use crate::session_index::SessionEntry;
pub use crate::transcript_context::Context;
pub(crate) use crate::transcript_context::Tracked;
use crate::transcript_context::{entries_of, repair};

/// One transcript line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// A message (user, assistant with its tool calls, or tool result).
    Message {
        /// When, ms since the epoch.
        ts: u64,
        /// The message.
        message: Message,
    },
    /// A compaction summary replacing everything before it but the last `kept` messages.
    Compaction {
        /// When.
        ts: u64,
        /// The summary.
        summary: String,
        /// Messages just before this entry that stay verbatim.
        #[serde(default)]
        kept: usize,
    },
}

impl Entry {
    /// A message entry written now.
    pub fn message(message: Message) -> Self {
        Self::Message {
            ts: lurkbot_core::now_ms(),
            message,
        }
    }
}

/// The sessions of one agent.
#[derive(Debug, Clone)]
pub struct Sessions {
    dir: PathBuf,
    cap: usize,
    /// The PostgreSQL store and the agent's prefix in it (`sessions/<agentId>`), when the
    /// home's state is there.
    shared: Option<(lurkbot_state::Store, String)>,
}

type Index = BTreeMap<String, SessionEntry>;

impl Sessions {
    /// The store of `agent_id` under the home.
    pub fn open(home: &Home, agent_id: &str) -> Self {
        Self {
            dir: home.join(layout::SESSIONS).join(agent_id),
            cap: crate::session_index::MAX_INDEXED_SESSIONS,
            shared: crate::shared_state::of(home)
                .map(|store| (store, format!("{}/{agent_id}", layout::SESSIONS))),
        }
    }

    /// The index's document name in the shared store.
    fn index_doc(prefix: &str) -> String {
        format!("{prefix}/sessions.json")
    }

    /// A transcript's log name in the shared store.
    fn log_of(prefix: &str, session_id: &str) -> String {
        format!("{prefix}/{session_id}.jsonl")
    }

    fn parse_index(&self, bytes: &[u8]) -> Result<Index, AgentError> {
        serde_json::from_slice(bytes).map_err(|source| AgentError::Damaged {
            path: self.index_path(),
            source,
        })
    }

    /// The same store with another index cap (tests).
    #[must_use]
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap.max(1);
        self
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("sessions.json")
    }

    /// The transcript file of a session id.
    pub fn transcript_path(&self, session_id: &str) -> PathBuf {
        self.dir.join(format!("{session_id}.jsonl"))
    }

    /// Every session, by key.
    ///
    /// # Errors
    /// A damaged index.
    pub fn list(&self) -> Result<BTreeMap<String, SessionEntry>, AgentError> {
        if let Some((store, prefix)) = &self.shared {
            return match store.document(&Self::index_doc(prefix))? {
                Some(text) => self.parse_index(text.as_bytes()),
                None => Ok(BTreeMap::new()),
            };
        }
        match std::fs::read(self.index_path()) {
            Ok(bytes) => self.parse_index(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(AgentError::io("read", self.index_path(), e)),
        }
    }

    /// Changes the index under an exclusive lock (other processes wait).
    fn change<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Index) -> T + Send + 'static,
    ) -> Result<T, AgentError> {
        self.change_with(true, f)
    }

    /// [`Sessions::change`]; `durable = false` skips the directory fsync after the rename (the
    /// index may fall back to its previous content after a crash: only for counters).
    fn change_with<T: Send + 'static>(
        &self,
        durable: bool,
        f: impl FnOnce(&mut Index) -> T + Send + 'static,
    ) -> Result<T, AgentError> {
        if let Some((store, prefix)) = &self.shared {
            let (me, cap) = (self.clone(), self.cap);
            return store.edit_document_with(&Self::index_doc(prefix), durable, move |text| {
                let mut all = match text {
                    Some(text) => me.parse_index(text.as_bytes())?,
                    None => Index::new(),
                };
                let value = f(&mut all);
                crate::session_index::prune(&mut all, cap);
                let body =
                    serde_json::to_string_pretty(&all).map_err(|source| AgentError::Encode {
                        what: "sessions.json",
                        source,
                    })?;
                Ok(lurkbot_state::Edit::replace(body, value))
            })?;
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| AgentError::io("create", &self.dir, e))?;
        let lock_path = self.dir.join(".lock");
        let lock = File::create(&lock_path).map_err(|e| AgentError::io("lock", &lock_path, e))?;
        lock.lock()
            .map_err(|e| AgentError::io("lock", &lock_path, e))?;
        let mut all = self.list()?;
        let out = f(&mut all);
        crate::session_index::prune(&mut all, self.cap);
        let bytes = serde_json::to_vec_pretty(&all).map_err(|source| AgentError::Encode {
            what: "sessions.json",
            source,
        })?;
        if durable {
            lurkbot_core::write_atomic(&self.index_path(), &bytes)?;
        } else {
            lurkbot_core::write_atomic_may_revert(&self.index_path(), &bytes)?;
        }
        Ok(out)
    }

    /// The entry of `key`, created with a new session id on first use.
    ///
    /// # Errors
    /// Store failures.
    pub fn get_or_create(&self, key: &SessionKey) -> Result<SessionEntry, AgentError> {
        if let Some(entry) = self.list()?.get(key.as_str()) {
            return Ok(entry.clone());
        }
        let key = key.as_str().to_string();
        self.change(move |all| {
            all.entry(key.clone())
                .or_insert_with(|| {
                    let now = lurkbot_core::now_ms();
                    SessionEntry {
                        key,
                        session_id: lurkbot_core::new_session_id(),
                        created_ms: now,
                        updated_ms: now,
                        model: None,
                        usage: Usage::default(),
                        turns: 0,
                    }
                })
                .clone()
        })
    }

    /// The entry of `key` (created on its first turn) and whether no session of this agent has
    /// finished a turn yet (the workspace's first run), from one read of the index.
    ///
    /// # Errors
    /// Store failures.
    pub fn open_turn(&self, key: &SessionKey) -> Result<(SessionEntry, bool), AgentError> {
        let all = self.list()?;
        let first_run = all.values().all(|e| e.turns == 0);
        match all.get(key.as_str()) {
            Some(entry) => Ok((entry.clone(), first_run)),
            None => Ok((self.get_or_create(key)?, first_run)),
        }
    }

    /// Records a finished turn's model and usage. These counters are for display (the
    /// transcript and the usage records are the durable account), so the index is replaced
    /// without the directory fsync: a crash may lose the last turn's counters, never a session.
    ///
    /// # Errors
    /// Store failures.
    pub fn record_turn(
        &self,
        key: &SessionKey,
        model: &str,
        usage: Usage,
    ) -> Result<(), AgentError> {
        let (key, model) = (key.as_str().to_string(), model.to_string());
        self.change_with(false, move |all| {
            if let Some(e) = all.get_mut(&key) {
                e.updated_ms = lurkbot_core::now_ms();
                e.model = Some(model);
                e.usage.input_tokens += usage.input_tokens;
                e.usage.output_tokens += usage.output_tokens;
                e.turns += 1;
            }
        })
    }

    /// Starts a fresh session for `key` (the old transcript stays on disk); returns the new id.
    ///
    /// # Errors
    /// Store failures.
    pub fn reset(&self, key: &SessionKey) -> Result<String, AgentError> {
        let id = lurkbot_core::new_session_id();
        let (key, new_id) = (key.as_str().to_string(), id.clone());
        self.change(move |all| {
            let now = lurkbot_core::now_ms();
            all.insert(
                key.clone(),
                SessionEntry {
                    key,
                    session_id: new_id,
                    created_ms: now,
                    updated_ms: now,
                    model: None,
                    usage: Usage::default(),
                    turns: 0,
                },
            );
        })?;
        Ok(id)
    }

    /// Deletes `key` and its current transcript; false when it did not exist.
    ///
    /// # Errors
    /// Store failures.
    pub fn delete(&self, key: &SessionKey) -> Result<bool, AgentError> {
        let gone = key.as_str().to_string();
        let removed = self.change(move |all| all.remove(&gone))?;
        if let (Some(entry), Some((store, prefix))) = (&removed, &self.shared) {
            store.delete_log(&Self::log_of(prefix, &entry.session_id))?;
            return Ok(true);
        }
        if let Some(entry) = &removed {
            match std::fs::remove_file(self.transcript_path(&entry.session_id)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    let path = self.transcript_path(&entry.session_id);
                    return Err(AgentError::io("delete", path, e));
                }
            }
        }
        Ok(removed.is_some())
    }

    /// Appends entries and flushes them to disk.
    ///
    /// # Errors
    /// Store failures.
    pub fn append(&self, session_id: &str, entries: &[Entry]) -> Result<(), AgentError> {
        self.write_entries(session_id, entries, true)
    }

    /// Appends entries; `sync` also forces them to stable storage (the end of a step). Without
    /// it they are written to the OS at once (a killed process loses nothing) and made durable
    /// by the next synced append.
    fn write_entries(
        &self,
        session_id: &str,
        entries: &[Entry],
        sync: bool,
    ) -> Result<(), AgentError> {
        self.write_measured(session_id, entries, sync).map(drop)
    }

    /// [`Sessions::write_entries`], with the transcript's length before and after when the
    /// shared store measured them in the same transaction (`None` for the files).
    fn write_measured(
        &self,
        session_id: &str,
        entries: &[Entry],
        sync: bool,
    ) -> Result<Option<(u64, u64)>, AgentError> {
        if let Some((store, prefix)) = &self.shared {
            let mut lines = Vec::with_capacity(entries.len());
            for entry in entries {
                lines.push(
                    serde_json::to_string(entry).map_err(|source| AgentError::Encode {
                        what: "a transcript entry",
                        source,
                    })?,
                );
            }
            let log = Self::log_of(prefix, session_id);
            return Ok(Some(store.append_log_lines(&log, lines, sync)?));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| AgentError::io("create", &self.dir, e))?;
        let mut text = String::new();
        for entry in entries {
            text.push_str(
                &serde_json::to_string(entry).map_err(|source| AgentError::Encode {
                    what: "a transcript entry",
                    source,
                })?,
            );
            text.push('\n');
        }
        let path = self.transcript_path(session_id);
        // A crash mid-write can leave a torn last line: start on a fresh line so it stays the
        // only casualty.
        if ends_torn(&path) {
            text.insert(0, '\n');
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| AgentError::io("open", &path, e))?;
        file.write_all(text.as_bytes())
            .and_then(|()| if sync { file.sync_data() } else { Ok(()) })
            .map_err(|e| AgentError::io("write", &path, e))?;
        Ok(None)
    }

    /// Every readable entry of a transcript (a torn last line is skipped).
    ///
    /// # Errors
    /// Store failures.
    pub fn history(&self, session_id: &str) -> Result<Vec<Entry>, AgentError> {
        if let Some((store, prefix)) = &self.shared {
            return Ok(entries_of(
                store
                    .log(&Self::log_of(prefix, session_id))?
                    .iter()
                    .map(String::as_str),
            ));
        }
        let text = match std::fs::read_to_string(self.transcript_path(session_id)) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(AgentError::io("read", self.transcript_path(session_id), e));
            }
        };
        Ok(entries_of(text.lines()))
    }

    /// What the model sees: the latest compaction summary and the messages after it (plus
    /// those it kept), unfinished tool calls answered "interrupted".
    ///
    /// # Errors
    /// `Store` when the transcript cannot be read.
    pub fn context(&self, session_id: &str) -> Result<Context, AgentError> {
        let mut context = self.raw_context(session_id)?;
        context.messages = repair(context.messages);
        Ok(context)
    }

    /// Like [`Sessions::context`], without the repair: message positions match what later
    /// compaction entries count.
    ///
    /// # Errors
    /// `Store` when the transcript cannot be read.
    pub fn raw_context(&self, session_id: &str) -> Result<Context, AgentError> {
        let mut context = Context::default();
        for entry in self.history(session_id)? {
            context.apply(entry);
        }
        Ok(context)
    }

    /// The raw context of `session_id`, reusing `cached` when the transcript has not changed
    /// since (same session, same length): a long session is not re-read and re-parsed for
    /// every model step.
    ///
    /// # Errors
    /// `Store` when the transcript cannot be read.
    pub fn tracked(
        &self,
        session_id: &str,
        cached: Option<Tracked>,
    ) -> Result<Tracked, AgentError> {
        let len = self.transcript_len(session_id);
        if let Some(cached) = cached.filter(|c| c.session_id == session_id && c.len == len) {
            return Ok(cached);
        }
        Ok(Tracked {
            session_id: session_id.to_string(),
            len,
            raw: self.raw_context(session_id)?,
        })
    }

    /// Appends entries and applies them to `tracked`; `end_of_step` syncs them to stable
    /// storage (see [`Sessions::append`]).
    ///
    /// # Errors
    /// Store failures.
    pub fn append_tracked(
        &self,
        tracked: &mut Tracked,
        entries: &[Entry],
        end_of_step: bool,
    ) -> Result<(), AgentError> {
        let (before, after) = match self.shared {
            // Measured by the store in the append's own transaction: no extra round trips.
            Some(_) => self
                .write_measured(&tracked.session_id, entries, end_of_step)?
                .unwrap_or_default(),
            None => {
                let before = self.transcript_len(&tracked.session_id);
                self.write_entries(&tracked.session_id, entries, end_of_step)?;
                (before, self.transcript_len(&tracked.session_id))
            }
        };
        if before == tracked.len {
            for entry in entries {
                tracked.raw.apply(entry.clone());
            }
            tracked.len = after;
        } else {
            // Someone else wrote in between: read it all again.
            *tracked = self.tracked(&tracked.session_id, None)?;
        }
        Ok(())
    }

    /// The entries written after the first `offset` bytes of a transcript (a resumed turn's
    /// own, after the length its journal recorded); a torn last line is skipped.
    ///
    /// # Errors
    /// Store failures.
    pub fn entries_since(&self, session_id: &str, offset: u64) -> Result<Vec<Entry>, AgentError> {
        use std::io::{Read, Seek, SeekFrom};
        if let Some((store, prefix)) = &self.shared {
            return Ok(entries_of(
                store
                    .log_since(&Self::log_of(prefix, session_id), offset)?
                    .iter()
                    .map(String::as_str),
            ));
        }
        let path = self.transcript_path(session_id);
        let mut text = String::new();
        File::open(&path)
            .and_then(|mut f| {
                f.seek(SeekFrom::Start(offset))?;
                f.read_to_string(&mut text)
            })
            .map_err(|e| AgentError::io("read", &path, e))?;
        Ok(entries_of(text.lines()))
    }

    /// The length in bytes of a transcript (0 when it does not exist).
    pub fn transcript_len(&self, session_id: &str) -> u64 {
        if let Some((store, prefix)) = &self.shared {
            return store
                .log_len(&Self::log_of(prefix, session_id))
                .unwrap_or_default();
        }
        std::fs::metadata(self.transcript_path(session_id)).map_or(0, |m| m.len())
    }
}

/// Whether a file exists, is not empty and does not end with a newline.
fn ends_torn(path: &std::path::Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = File::open(path) else {
        return false;
    };
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1)).is_ok() && file.read_exact(&mut last).is_ok() && last[0] != b'\n'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> Entry {
        Entry::Message {
            ts: 1,
            message: Message::user(text),
        }
    }

    #[test]
    fn the_store_holds_its_cap_and_keeps_pruned_transcripts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::open(dir.path()).expect("home");
        let sessions = Sessions::open(&home, "main").with_cap(3);
        let main = sessions.get_or_create(&SessionKey::main()).expect("main");
        let mut ids = Vec::new();
        for i in 0..4 {
            let key = SessionKey::parse(&format!("agent:main:dm:api:k{i}")).expect("key");
            let entry = sessions.get_or_create(&key).expect("create");
            sessions
                .append(&entry.session_id, &[message("hi")])
                .expect("append");
            sessions
                .record_turn(&key, "m", Usage::default())
                .expect("turn");
            ids.push(entry.session_id);
        }
        let all = sessions.list().expect("list");
        assert_eq!(all.len(), 3, "{:?}", all.keys());
        assert_eq!(all["agent:main:main"].session_id, main.session_id);
        // The newest key was just written, so it is kept.
        assert!(all.contains_key("agent:main:dm:api:k3"));
        // Every transcript stays on disk, the pruned keys' included.
        for id in &ids {
            assert!(sessions.transcript_path(id).is_file(), "{id}");
        }
    }

    #[test]
    fn tracked_context_follows_appends_and_rereads_after_other_writers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::open(dir.path()).expect("home");
        let sessions = Sessions::open(&home, "main");
        let mut tracked = sessions.tracked("ses_x", None).expect("empty");
        sessions
            .append_tracked(&mut tracked, &[message("one")], false)
            .expect("append");
        sessions
            .append_tracked(&mut tracked, &[message("two")], true)
            .expect("append");
        assert_eq!(tracked.context(), sessions.context("ses_x").expect("read"));
        // Another writer (a cancel marker, another process) appends: the cache is not reused.
        sessions
            .append("ses_x", &[message("three")])
            .expect("append");
        let again = sessions.tracked("ses_x", Some(tracked)).expect("reread");
        assert_eq!(again.raw.messages.len(), 3);
        // A compaction keeps the last `kept` messages.
        let mut again = again;
        sessions
            .append_tracked(
                &mut again,
                &[Entry::Compaction {
                    ts: 2,
                    summary: "S".into(),
                    kept: 1,
                }],
                true,
            )
            .expect("append");
        assert_eq!(again.raw.summary.as_deref(), Some("S"));
        assert_eq!(again.raw.messages, vec![Message::user("three")]);
        assert_eq!(again.context(), sessions.context("ses_x").expect("read"));
    }
}
