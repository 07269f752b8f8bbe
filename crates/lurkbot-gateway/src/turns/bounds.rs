//! How much one session host keeps at most (ARCHITECTURE.md §9, bounded memory): idle
//! agents and idle slots (`slots.rs` trims to these).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Sessions whose idle agents are kept between turns.
pub(crate) const HELD_AGENTS: usize = 32;
/// Sessions whose idle slots (their last run id) are kept.
pub(crate) const KEPT_SLOTS: usize = 1024;
/// A user's host on a shared gateway keeps a quarter of each, so what twenty users' hosts
/// keep together stays within a few times one gateway's (ARCHITECTURE.md §6.2).
pub(crate) const USER_HELD_AGENTS: usize = HELD_AGENTS / 4;
/// See [`USER_HELD_AGENTS`].
pub(crate) const USER_KEPT_SLOTS: usize = KEPT_SLOTS / 4;

/// What one host keeps at most: idle agents and idle slots.
#[derive(Debug)]
pub(crate) struct Bounds {
    agents: AtomicUsize,
    slots: AtomicUsize,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            agents: AtomicUsize::new(HELD_AGENTS),
            slots: AtomicUsize::new(KEPT_SLOTS),
        }
    }
}

impl Bounds {
    /// A user's bounds ([`USER_HELD_AGENTS`], [`USER_KEPT_SLOTS`]).
    pub(crate) fn for_a_user(&self) {
        self.agents.store(USER_HELD_AGENTS, Ordering::Relaxed);
        self.slots.store(USER_KEPT_SLOTS, Ordering::Relaxed);
    }

    /// (idle agents held, idle slots kept) at most.
    pub(crate) fn get(&self) -> (usize, usize) {
        (
            self.agents.load(Ordering::Relaxed),
            self.slots.load(Ordering::Relaxed),
        )
    }
}
