//! Which homes of this process keep their shared state in a PostgreSQL store (ARCHITECTURE.md
//! §6.3): a home is registered when its store is opened for it (`lurkbot_agent::setup`) and
//! stays registered while the store is open — the registry holds no store open itself, so a
//! gateway that stops closes its connection. Readers of the home's shared files (sessions,
//! usage, cron jobs, users, pairings, devices) ask it which place to use.

use std::path::PathBuf;
use std::sync::Mutex;

use lurkbot_core::Home;

use crate::{Store, WeakStore};

static SHARED: Mutex<Vec<(PathBuf, WeakStore)>> = Mutex::new(Vec::new());

fn lock() -> std::sync::MutexGuard<'static, Vec<(PathBuf, WeakStore)>> {
    SHARED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Keeps `home`'s shared state in `store` while it is open.
pub fn share(home: &Home, store: &Store) {
    let mut shared = lock();
    shared.retain(|(root, weak)| root != home.root() && weak.upgrade().is_some());
    shared.push((home.root().to_path_buf(), store.downgrade()));
}

/// The store `home`'s shared state is in, if it is in one and the store is open.
pub fn of(home: &Home) -> Option<Store> {
    lock()
        .iter()
        .find(|(root, _)| root == home.root())
        .and_then(|(_, weak)| weak.upgrade())
}
