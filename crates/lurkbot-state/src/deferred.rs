//! The end of a turn the store could not record at that moment (PostgreSQL down, a lost
//! connection): its answer, its usage record and its budget hold's release are kept — in memory
//! and in the home's `state/deferred/<gateway id>.jsonl` — and written again until the store
//! takes them (ARCHITECTURE.md §6.3). Nothing is dropped and nothing waits on them:
//!
//! - While it waits, the turn reads as ended to this gateway ([`Store::turn`], a retried
//!   `Idempotency-Key`): the retry gets its own turn's answer at once.
//! - Every lease renewal (2 s) and every start tries them again, oldest first; the first that
//!   fails stops the pass. A turn another gateway ended meanwhile keeps that end; a usage
//!   record already stored is not stored twice; a release is a delete.
//! - The file is locked by its gateway while it lives, so a gateway that died with writes
//!   waiting leaves them to the next start on the home (the same id or another), which takes
//!   the file's lock and writes them; a live gateway's file is never taken.

use std::fs::File;
use std::io::{BufRead, Seek, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::outbox::{NewOutgoing, Outgoing};
use crate::{StateError, Store};

/// One write a turn's end could not make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Write {
    /// The turn's end in the journal with what it sends.
    Finish {
        /// The turn.
        id: String,
        /// Its answer (ended `done`).
        reply: Option<String>,
        /// Its failure (ended `failed`).
        error: Option<String>,
        /// The messages it sends.
        outgoing: Vec<NewOutgoing>,
    },
    /// A model call's usage record.
    Usage {
        /// When it was made, ms.
        ts: u64,
        /// The record.
        record: String,
    },
    /// A call's budget hold, ended.
    Release {
        /// The hold.
        id: String,
    },
}

/// The writes one store keeps until they are recorded.
pub(crate) struct Deferred {
    dir: PathBuf,
    owner: String,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    writes: Vec<Write>,
    /// This gateway's file, locked while the store lives (once anything was deferred).
    file: Option<File>,
}

impl Deferred {
    /// The deferred writes of gateway `owner` in `state_dir` (nothing is made until one waits).
    pub(crate) fn new(state_dir: &Path, owner: &str) -> Self {
        Self {
            dir: state_dir.join("deferred"),
            owner: owner.to_string(),
            queue: Mutex::new(Queue::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        match self.queue.lock() {
            Ok(queue) => queue,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Keeps `write` until it is recorded: in memory, and appended to this gateway's file.
    fn push(&self, write: Write) {
        let mut queue = self.lock();
        queue.writes.push(write.clone());
        if let Err(e) = self.append(&mut queue, &write) {
            tracing::warn!(error = %e, "a deferred write is kept in memory only");
        }
    }

    fn append(&self, queue: &mut Queue, write: &Write) -> std::io::Result<()> {
        if queue.file.is_none() {
            self.open_own(queue, true)?;
        }
        let Some(file) = queue.file.as_mut() else {
            return Ok(());
        };
        let line = serde_json::to_string(write).map_err(std::io::Error::other)?;
        file.seek(std::io::SeekFrom::End(0))?;
        file.write_all(format!("{line}\n").as_bytes())?;
        file.sync_data()
    }

    /// Opens and locks this gateway's file (made when `create`); what a dead process with this
    /// id left in it goes first in the queue (those lines stay in the file).
    fn open_own(&self, queue: &mut Queue, create: bool) -> std::io::Result<()> {
        let path = self.dir.join(format!("{}.jsonl", self.owner));
        if !create && !path.exists() {
            return Ok(());
        }
        lurkbot_core::create_private_dir(&self.dir).map_err(std::io::Error::other)?;
        let mut file = open_private(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            // Another process is writing this id's leftovers: kept in memory this time.
            Err(std::fs::TryLockError::WouldBlock) => return Ok(()),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let mut writes = read_writes(&mut file)?;
        let leftovers = writes.len();
        writes.append(&mut queue.writes);
        queue.writes = writes;
        queue.file = Some(file);
        if leftovers > 0 {
            tracing::info!(
                leftovers,
                "turn ends a stopped gateway with this id left: written again"
            );
        }
        Ok(())
    }

    /// How this turn ended, while its end waits to be recorded: `(reply, error)`.
    pub(crate) fn ended(&self, id: &str) -> Option<(Option<String>, Option<String>)> {
        self.lock().writes.iter().find_map(|w| match w {
            Write::Finish {
                id: own,
                reply,
                error,
                ..
            } if own == id => Some((reply.clone(), error.clone())),
            _ => None,
        })
    }

    /// How many writes wait.
    pub(crate) fn waiting(&self) -> usize {
        self.lock().writes.len()
    }
}

fn open_private(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// The writes in a deferred file (lines that are not one are skipped, with a warning).
fn read_writes(file: &mut File) -> std::io::Result<Vec<Write>> {
    file.rewind()?;
    let mut writes = Vec::new();
    for line in std::io::BufReader::new(&*file).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(write) => writes.push(write),
            Err(e) => tracing::warn!(error = %e, "a deferred write that does not parse is skipped"),
        }
    }
    Ok(writes)
}

/// Replaces a deferred file's lines with `writes`.
fn rewrite(file: &mut File, writes: &[Write]) -> std::io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    for write in writes {
        let line = serde_json::to_string(write).map_err(std::io::Error::other)?;
        file.write_all(format!("{line}\n").as_bytes())?;
    }
    file.sync_data()
}

impl Store {
    /// Ends turn `id` as [`Store::finish`] does; when the store cannot record it now, its end
    /// is kept and written later ([`Store::flush_deferred`]): the error says why it waits.
    ///
    /// # Errors
    /// The store's failure; the end is kept all the same.
    pub fn finish_or_defer(
        &self,
        id: &str,
        outcome: Result<&str, &str>,
        outgoing: &[NewOutgoing],
    ) -> Result<Vec<Outgoing>, StateError> {
        self.finish(id, outcome, outgoing).inspect_err(|_| {
            self.deferred.push(Write::Finish {
                id: id.to_string(),
                reply: outcome.ok().map(str::to_string),
                error: outcome.err().map(str::to_string),
                outgoing: outgoing.to_vec(),
            });
        })
    }

    /// Appends a usage record as [`Store::append_usage`] does, keeping it for later when the
    /// store cannot take it now.
    ///
    /// # Errors
    /// The store's failure; the record is kept all the same.
    pub fn record_usage(&self, ts_ms: u64, record: &str) -> Result<(), StateError> {
        self.append_usage(ts_ms, record).inspect_err(|_| {
            self.deferred.push(Write::Usage {
                ts: ts_ms,
                record: record.to_string(),
            });
        })
    }

    /// Ends hold `id` as [`Store::release_budget`] does, keeping the release for later when
    /// the store cannot take it now (until then the hold counts, at most its lifetime).
    ///
    /// # Errors
    /// The store's failure; the release is kept all the same.
    pub fn release_or_defer(&self, id: &str) -> Result<(), StateError> {
        self.release_budget(id).inspect_err(|_| {
            self.deferred.push(Write::Release { id: id.to_string() });
        })
    }

    /// How many writes of turns' ends wait to be recorded (`status`, tests).
    pub fn deferred_waiting(&self) -> usize {
        self.deferred.waiting()
    }

    /// Writes what waits: this gateway's deferred writes, then those a gateway that is gone
    /// left in the home; the messages the recorded ends send (the caller sends them).
    ///
    /// # Errors
    /// The store failing (what was not written waits for the next call).
    pub fn flush_deferred(&self) -> Result<Vec<Outgoing>, StateError> {
        let mut recorded = self.flush_own()?;
        recorded.extend(self.flush_left()?);
        Ok(recorded)
    }

    fn flush_own(&self) -> Result<Vec<Outgoing>, StateError> {
        let deferred = &self.deferred;
        let mut queue = deferred.lock();
        // After a restart with the same id: what the last process left, first.
        if queue.file.is_none() {
            deferred.open_own(&mut queue, false).map_err(io)?;
        }
        if queue.writes.is_empty() {
            return Ok(Vec::new());
        }
        let writes = std::mem::take(&mut queue.writes);
        let (recorded, left, failure) = self.apply_all(writes);
        queue.writes = left;
        let queue = &mut *queue;
        if let Some(file) = queue.file.as_mut() {
            rewrite(file, &queue.writes).map_err(io)?;
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(recorded),
        }
    }

    /// The files of gateways that are gone (their lock is free): written, then removed.
    fn flush_left(&self) -> Result<Vec<Outgoing>, StateError> {
        let dir = &self.deferred.dir;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        let own = format!("{}.jsonl", self.deferred.owner);
        let mut recorded = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == own || !name.ends_with(".jsonl") {
                continue;
            }
            let path = entry.path();
            let Ok(mut file) = open_private(&path) else {
                continue;
            };
            if file.try_lock().is_err() {
                continue; // its gateway lives (or another is taking it now)
            }
            let writes = read_writes(&mut file).map_err(io)?;
            let (done, left, failure) = self.apply_all(writes);
            recorded.extend(done);
            if left.is_empty() {
                // Emptied before it goes: a reader that opened it before the removal reads
                // nothing once it has the lock.
                file.set_len(0).map_err(io)?;
                let _ = std::fs::remove_file(&path);
            } else {
                rewrite(&mut file, &left).map_err(io)?;
            }
            if let Some(e) = failure {
                return Err(e);
            }
        }
        Ok(recorded)
    }

    /// Writes `writes` in order up to the first failure: (the messages recorded, the writes
    /// left, the failure).
    fn apply_all(&self, writes: Vec<Write>) -> (Vec<Outgoing>, Vec<Write>, Option<StateError>) {
        let mut recorded = Vec::new();
        let mut writes = writes.into_iter();
        while let Some(write) = writes.next() {
            let done = match &write {
                Write::Finish {
                    id,
                    reply,
                    error,
                    outgoing,
                } => {
                    let outcome = match (reply, error) {
                        (Some(reply), _) => Ok(reply.as_str()),
                        (None, Some(error)) => Err(error.as_str()),
                        (None, None) => Ok(""),
                    };
                    self.finish_if_open(id, outcome, outgoing).inspect(|_| {
                        tracing::info!(run_id = id.as_str(), "a deferred turn end recorded")
                    })
                }
                Write::Usage { ts, record } => {
                    self.append_usage_once(*ts, record).map(|()| Vec::new())
                }
                Write::Release { id } => self.release_budget(id).map(|()| Vec::new()),
            };
            match done {
                Ok(messages) => recorded.extend(messages),
                Err(e) => {
                    let mut left = vec![write];
                    left.extend(writes);
                    return (recorded, left, Some(e));
                }
            }
        }
        (recorded, Vec::new(), None)
    }
}

fn io(e: std::io::Error) -> StateError {
    StateError::Deferred(e)
}
