//! What a session's IRC connection keeps: `workspace/irc/sessions/<session key>/` holds
//! `inbound.jsonl` (every message received, cleaned), `outbound.jsonl` (every message sent) and
//! `cursors.json` (per channel, the last id `pull` delivered). In memory: a ring buffer of the
//! latest messages, reloaded from the log when the gateway restarts, so ids keep increasing and
//! nothing received before a restart is lost to `pull`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;

use lurkbot_core::Home;
use serde::{Deserialize, Serialize};

use super::text;
use crate::{CommandError, ErrorCode};

/// Messages kept in memory per session.
pub(crate) const RING_CAPACITY: usize = 256;
/// Longest text stored per inbound message (the log is not a place for megabytes).
const STORED_CAP: usize = 4096;

/// One message received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    /// Increasing per session, across restarts.
    pub id: u64,
    /// Milliseconds since the epoch.
    pub ts: u64,
    /// The channel, or the sender's nick for a private message.
    pub channel: String,
    /// The sender.
    pub nick: String,
    /// The text, cleaned.
    pub text: String,
}

/// The in-memory side.
#[derive(Debug, Default)]
pub(crate) struct Ring {
    messages: VecDeque<Inbound>,
    next_id: u64,
    /// Per channel (lower case): messages pushed out of the ring, and how many of them a pull
    /// has already reported.
    evicted: HashMap<String, (u64, u64)>,
}

impl Ring {
    /// Adds a message with the next id; returns it.
    pub(crate) fn push(&mut self, ts: u64, channel: &str, nick: &str, raw: &str) -> Inbound {
        self.next_id += 1;
        let message = Inbound {
            id: self.next_id,
            ts,
            channel: channel.to_string(),
            nick: text::clean(nick),
            text: text::capped(raw, STORED_CAP).0,
        };
        self.messages.push_back(message.clone());
        while self.messages.len() > RING_CAPACITY {
            if let Some(old) = self.messages.pop_front() {
                self.evicted
                    .entry(old.channel.to_lowercase())
                    .or_default()
                    .0 += 1;
            }
        }
        message
    }

    /// Messages of `channel` after `cursor`, oldest first, at most `limit`.
    pub(crate) fn after(&self, channel: &str, cursor: u64, limit: usize) -> Vec<Inbound> {
        self.messages
            .iter()
            .filter(|m| m.id > cursor && m.channel.eq_ignore_ascii_case(channel))
            .take(limit)
            .cloned()
            .collect()
    }

    /// Messages of `channel` the ring dropped since the last report.
    pub(crate) fn dropped(&self, channel: &str) -> u64 {
        self.evicted
            .get(&channel.to_lowercase())
            .map_or(0, |(all, told)| all - told)
    }

    /// Marks the dropped messages of `channel` as reported.
    pub(crate) fn acknowledge(&mut self, channel: &str) {
        if let Some(e) = self.evicted.get_mut(&channel.to_lowercase()) {
            e.1 = e.0;
        }
    }
}

/// The files of one session.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    /// The folder of `session` in `home`.
    pub(crate) fn new(home: &Home, session: &str) -> Self {
        Self {
            dir: home.join("workspace/irc/sessions").join(session),
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The ring as the log left it: the latest messages and the last id.
    pub(crate) fn load_ring(&self) -> Ring {
        let mut ring = Ring::default();
        let window = lurkbot_core::tail(&self.file("inbound.jsonl"), None, RING_CAPACITY, 4 << 20)
            .unwrap_or_default();
        for line in window.lines {
            if let Ok(m) = serde_json::from_str::<Inbound>(&line) {
                ring.next_id = ring.next_id.max(m.id);
                ring.messages.push_back(m);
            }
        }
        ring
    }

    fn append(&self, name: &str, line: &impl Serialize) -> Result<(), CommandError> {
        let text = serde_json::to_string(line).unwrap_or_default();
        lurkbot_core::append_private_line(&self.file(name), &text).map_err(|e| {
            CommandError::new(ErrorCode::IoError, format!("cannot write the IRC log: {e}"))
        })
    }

    /// Appends a received message to `inbound.jsonl`.
    pub(crate) fn received(&self, message: &Inbound) -> Result<(), CommandError> {
        self.append("inbound.jsonl", message)
    }

    /// Appends a sent message to `outbound.jsonl`.
    pub(crate) fn sent(&self, ts: u64, to: &str, text: &str) -> Result<(), CommandError> {
        #[derive(Serialize)]
        struct Outbound<'a> {
            ts: u64,
            to: &'a str,
            text: &'a str,
        }
        self.append("outbound.jsonl", &Outbound { ts, to, text })
    }

    /// The last delivered id per channel (lower case).
    pub(crate) fn cursors(&self) -> BTreeMap<String, u64> {
        std::fs::read_to_string(self.file("cursors.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Saves the cursor of `channel` (atomically).
    pub(crate) fn save_cursor(&self, channel: &str, id: u64) -> Result<(), CommandError> {
        let mut all = self.cursors();
        all.insert(channel.to_lowercase(), id);
        lurkbot_core::create_private_dir(&self.dir)
            .map_err(|e| CommandError::new(ErrorCode::IoError, e.to_string()))?;
        let text = serde_json::to_vec_pretty(&all).unwrap_or_default();
        lurkbot_core::write_atomic_with_mode(&self.file("cursors.json"), &text, 0o600)
            .map_err(|e| CommandError::new(ErrorCode::IoError, e.to_string()))
    }

    /// The last `limit` logged messages of `channel` (from at most the log's last 4 MiB).
    pub(crate) fn history(&self, channel: &str, limit: usize) -> Vec<Inbound> {
        let window = lurkbot_core::tail(&self.file("inbound.jsonl"), None, 100_000, 4 << 20)
            .unwrap_or_default();
        let mut found: Vec<Inbound> = window
            .lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Inbound>(l).ok())
            .filter(|m| m.channel.eq_ignore_ascii_case(channel))
            .collect();
        let excess = found.len().saturating_sub(limit);
        found.drain(..excess);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_counts_what_it_drops_per_channel() {
        let mut ring = Ring::default();
        for i in 0..(RING_CAPACITY + 10) {
            ring.push(0, if i % 2 == 0 { "#a" } else { "bob" }, "n", "t");
        }
        assert_eq!(ring.dropped("#A"), 5);
        assert_eq!(ring.dropped("bob"), 5);
        ring.acknowledge("#a");
        assert_eq!(ring.dropped("#a"), 0);
        assert_eq!(ring.after("#a", 0, 1000).len(), RING_CAPACITY / 2);
        assert_eq!(ring.after("#a", 0, 3)[0].id, 11);
    }
}
