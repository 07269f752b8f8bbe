//! A small time-bounded cache for web answers (ARCHITECTURE.md §5.2: 15 minutes, bounded): at
//! most `max_entries` answers and `max_bytes` of them; the oldest goes first when either is
//! full. Time is passed in, so tests move it by hand.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer is reused.
pub(crate) const TTL: Duration = Duration::from_secs(15 * 60);

/// Answers by key, oldest first.
pub(crate) struct TtlCache {
    entries: Mutex<VecDeque<Entry>>,
    max_entries: usize,
    max_bytes: usize,
}

struct Entry {
    key: String,
    value: String,
    at: Instant,
}

impl TtlCache {
    /// An empty cache holding at most `max_entries` answers of `max_bytes` together.
    pub(crate) const fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: Mutex::new(VecDeque::new()),
            max_entries,
            max_bytes,
        }
    }

    /// The answer kept for `key`, when it is younger than [`TTL`] at `now`.
    pub(crate) fn get(&self, key: &str, now: Instant) -> Option<String> {
        let mut entries = self.lock();
        entries.retain(|e| now.saturating_duration_since(e.at) < TTL);
        entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.clone())
    }

    /// Keeps `value` for `key` from `now`; an answer larger than the whole cache is not kept.
    pub(crate) fn put(&self, key: &str, value: &str, now: Instant) {
        if value.len() + key.len() > self.max_bytes {
            return;
        }
        let mut entries = self.lock();
        entries.retain(|e| e.key != key);
        entries.push_back(Entry {
            key: key.to_string(),
            value: value.to_string(),
            at: now,
        });
        let size =
            |q: &VecDeque<Entry>| -> usize { q.iter().map(|e| e.key.len() + e.value.len()).sum() };
        while entries.len() > self.max_entries || size(&entries) > self.max_bytes {
            entries.pop_front();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        match self.entries.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_expire_and_the_oldest_go_first() {
        let cache = TtlCache::new(2, 100);
        let t0 = Instant::now();
        cache.put("a", "1", t0);
        assert_eq!(
            cache.get("a", t0 + TTL - Duration::from_secs(1)).as_deref(),
            Some("1")
        );
        assert_eq!(cache.get("a", t0 + TTL), None);
        cache.put("a", "1", t0);
        cache.put("b", "2", t0);
        cache.put("c", "3", t0);
        assert_eq!(cache.get("a", t0), None, "a third entry evicts the oldest");
        assert_eq!(cache.get("c", t0).as_deref(), Some("3"));
        cache.put("big", &"x".repeat(95), t0);
        assert_eq!(cache.get("b", t0), None, "the byte bound evicts too");
        assert_eq!(
            cache.get("c", t0).as_deref(),
            Some("3"),
            "only as much as needed"
        );
        cache.put("huge", &"x".repeat(200), t0);
        assert_eq!(
            cache.get("huge", t0),
            None,
            "larger than the cache: not kept"
        );
    }
}
