//! The registry of running sub-agents (who spawned each, how deep, its label): shared by the
//! runtime that runs them and the spawn that adds them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One running child.
#[derive(Debug, Clone)]
pub(crate) struct Child {
    pub(crate) requester: String,
    pub(crate) depth: u32,
    pub(crate) label: Option<String>,
}

/// The running sub-agents of one runtime (clones share one registry).
#[derive(Debug, Clone, Default)]
pub struct Subagents {
    children: Arc<Mutex<HashMap<String, Child>>>,
}

impl Subagents {
    /// How deep `session` is: 0 for a session that is not a running child.
    pub fn depth_of(&self, session: &str) -> u32 {
        self.children
            .lock()
            .ok()
            .and_then(|c| c.get(session).map(|c| c.depth))
            .unwrap_or(0)
    }

    /// Sub-agents running now.
    pub fn count(&self) -> usize {
        self.children.lock().map(|c| c.len()).unwrap_or_default()
    }

    /// The running children of `requester`.
    pub fn children_of(&self, requester: &str) -> Vec<String> {
        self.children
            .lock()
            .map(|c| {
                c.iter()
                    .filter(|(_, child)| child.requester == requester)
                    .map(|(key, _)| key.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The label of a running child.
    pub fn label_of(&self, child: &str) -> Option<String> {
        self.children
            .lock()
            .ok()
            .and_then(|c| c.get(child).and_then(|c| c.label.clone()))
    }

    pub(crate) fn insert(&self, key: &str, child: Child) {
        if let Ok(mut c) = self.children.lock() {
            c.insert(key.to_string(), child);
        }
    }

    pub(crate) fn remove(&self, key: &str) {
        if let Ok(mut c) = self.children.lock() {
            c.remove(key);
        }
    }
}
