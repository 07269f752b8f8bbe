//! One agent's session index (`sessions.json`, written by `transcript.rs`): its entries, the
//! keys kept and which leave first.

use std::collections::BTreeMap;

use lurkbot_core::SessionKey;

use lurkbot_llm::Usage;
use serde::{Deserialize, Serialize};

/// The index entry of one session key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEntry {
    /// The key (`agent:main:main`, …).
    pub key: String,
    /// The current session id.
    pub session_id: String,
    /// Created, ms since the epoch.
    pub created_ms: u64,
    /// Last activity, ms since the epoch.
    pub updated_ms: u64,
    /// Model of the last turn.
    #[serde(default)]
    pub model: Option<String>,
    /// Tokens used so far.
    #[serde(default)]
    pub usage: Usage,
    /// Turns run.
    #[serde(default)]
    pub turns: u64,
}

/// Most session keys one agent's index keeps. Beyond it the least recently active keys leave
/// the index (never the agent's main session); their transcripts stay on disk as the record.
/// Each turn reads the index, so an index that grew with every stateless API request, cron
/// run or channel peer would make every turn slower and larger (OpenClaw's session maintenance
/// caps it at 500 entries in its `enforce` mode; the soak grew 2 MiB less than with 1,000).
pub(crate) const MAX_INDEXED_SESSIONS: usize = 500;

/// Removes the least recently active keys beyond `cap` (never an agent's main session).
pub(crate) fn prune(all: &mut BTreeMap<String, SessionEntry>, cap: usize) {
    if all.len() <= cap {
        return;
    }
    let mut by_age: Vec<(u64, String)> = all
        .iter()
        .filter(|(key, _)| !SessionKey::parse(key).is_ok_and(|k| k.is_main()))
        .map(|(key, e)| (e.updated_ms, key.clone()))
        .collect();
    by_age.sort_unstable();
    let excess = all.len() - cap;
    for (_, key) in by_age.into_iter().take(excess) {
        all.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, updated_ms: u64) -> (String, SessionEntry) {
        let entry = SessionEntry {
            key: key.to_string(),
            session_id: format!("ses_{updated_ms}"),
            created_ms: 0,
            updated_ms,
            model: None,
            usage: Usage::default(),
            turns: 1,
        };
        (key.to_string(), entry)
    }

    #[test]
    fn pruning_drops_the_least_recently_active_keys_never_the_main_session() {
        // The main session is the oldest here, and stays.
        let mut all: BTreeMap<String, SessionEntry> = [
            entry("agent:main:main", 1),
            entry("agent:main:dm:api:a", 40),
            entry("agent:main:dm:api:b", 10),
            entry("agent:main:dm:api:c", 30),
            entry("agent:main:dm:api:d", 20),
        ]
        .into_iter()
        .collect();
        prune(&mut all, 3);
        let keys: Vec<&str> = all.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "agent:main:dm:api:a",
                "agent:main:dm:api:c",
                "agent:main:main"
            ]
        );
        prune(&mut all, 3);
        assert_eq!(all.len(), 3);
    }
}
