//! What the session host keeps between turns, and its bounds (ARCHITECTURE.md §9, bounded
//! memory): every session that ran a turn has a slot; a slot holds the session's agent (its
//! settings, provider client and cached context) while the session is among the
//! [`HELD_AGENTS`](crate::turns::bounds::HELD_AGENTS) most recently used; an idle slot nobody else holds is forgotten once
//! [`KEPT_SLOTS`](crate::turns::bounds::KEPT_SLOTS) more recently used sessions exist. A forgotten agent is made again from the
//! session's transcript on its next turn (what is lost: the cached context, rebuilt from the
//! file, and a context window learned from an overflow error, learned again).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lurkbot_core::SessionKey;
use serde_json::{Value, json};

use crate::turns::host::{KEPT_RUNS, SessionHost, Slot};

impl SessionHost {
    /// The session's slot (made when missing), marked as just used.
    pub(crate) fn slot(&self, key: &SessionKey) -> Arc<Slot> {
        let use_count = self.uses.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = match self.slots.lock() {
            Ok(mut slots) => slots.entry(key.as_str().to_string()).or_default().clone(),
            Err(_) => Arc::new(Slot::default()),
        };
        slot.used.store(use_count, Ordering::Relaxed);
        slot
    }

    /// Sessions with a live resource.
    pub fn live_sessions(&self) -> Vec<String> {
        self.slots
            .lock()
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Drops the session's slot (nothing may run in it).
    pub fn forget(&self, key: &SessionKey) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.remove(key.as_str());
        }
    }

    /// Gives back the agents of idle sessions beyond the [`HELD_AGENTS`](crate::turns::bounds::HELD_AGENTS) most recently used,
    /// and forgets idle slots beyond the [`KEPT_SLOTS`](crate::turns::bounds::KEPT_SLOTS) most recently used. Busy ones (a turn
    /// running, background work, anyone else holding the slot) are left alone.
    pub(crate) fn trim(&self) {
        let (held, kept) = self.bounds.get();
        let Ok(mut slots) = self.slots.lock() else {
            return;
        };
        if slots.len() <= held {
            return;
        }
        let mut by_use: Vec<(u64, String)> = slots
            .iter()
            .map(|(key, slot)| (slot.used.load(Ordering::Relaxed), key.clone()))
            .collect();
        by_use.sort_unstable_by_key(|(used, _)| std::cmp::Reverse(*used));
        for (rank, (_, key)) in by_use.iter().enumerate().skip(held) {
            let Some(slot) = slots.get(key) else {
                continue;
            };
            let Ok(mut agent) = slot.agent.try_lock() else {
                continue;
            };
            *agent = None;
            drop(agent);
            let idle = Arc::strong_count(slot) == 1
                && slot.active.load(Ordering::SeqCst) == 0
                && slot.running.lock().is_ok_and(|r| r.is_none());
            if rank >= kept && idle {
                slots.remove(key);
            }
        }
    }

    /// Counts of what the host keeps, with their bounds (`status.retained`).
    pub(crate) fn retained(&self) -> Value {
        let (slots, agents) = self
            .slots
            .lock()
            .map(|slots| {
                let agents = slots
                    .values()
                    .filter(|s| s.agent.try_lock().map_or(true, |a| a.is_some()))
                    .count();
                (slots.len(), agents)
            })
            .unwrap_or_default();
        let (held, kept) = self.bounds.get();
        json!({
            "sessionSlots": slots,
            "sessionSlotsMax": kept,
            "agentsHeld": agents,
            "agentsHeldMax": held,
            "runRecords": self.runs.lock().map(|r| r.len()).unwrap_or_default(),
            "runRecordsMax": KEPT_RUNS,
            "subagents": self.subagents.count(),
        })
    }
}

impl crate::turns::host::SessionHost {
    /// How many of its sessions run a turn now.
    pub(crate) fn running_turns(&self) -> usize {
        self.slots.lock().map_or(0, |slots| {
            slots
                .values()
                .filter(|slot| slot.running.lock().is_ok_and(|r| r.is_some()))
                .count()
        })
    }
}
