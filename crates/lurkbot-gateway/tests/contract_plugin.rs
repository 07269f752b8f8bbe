//! The contract suite's platform for a channel a plugin provides (`contract.rs`): the plugin of
//! `plugins.rs` (a few lines of Python), delivering what the person writes as
//! `channel.receive` and logging each `channel.send`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

use crate::common::Gateway;
use crate::contract::{Platform, Reply, connected};
use crate::plugins::{MANIFEST, PLUGIN, delivers, lines};

/// A plugin's channel, `echo`.
pub(crate) struct Plugin {
    dir: OnceLock<PathBuf>,
    sent: Mutex<HashMap<String, Value>>,
    count: AtomicU64,
}

impl Plugin {
    pub(crate) fn new() -> Self {
        Self {
            dir: OnceLock::new(),
            sent: Mutex::default(),
            count: AtomicU64::new(0),
        }
    }

    fn dir(&self) -> &PathBuf {
        self.dir.get().unwrap_or_else(|| panic!("not ready"))
    }

    fn deliver(&self, params: Value) -> String {
        let id = params["id"].as_str().unwrap_or_default().to_string();
        if let Ok(mut sent) = self.sent.lock() {
            sent.insert(id.clone(), params.clone());
        }
        delivers(self.dir(), &params);
        id
    }

    fn next_id(&self) -> String {
        format!("c{}", self.count.fetch_add(1, Ordering::Relaxed))
    }
}

impl Platform for Plugin {
    const NAME: &'static str = "echo";
    const LIMIT: usize = 4000;

    fn settings(&self) -> (String, String) {
        (
            "allow_from = [\"owner\"]\n[plugins.echo]\nenabled = true\n".into(),
            String::new(),
        )
    }

    fn files(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "plugins/echo/lurkbot-plugin.toml",
                MANIFEST.replace(", \"hook:before_tool\"", ""),
            ),
            ("plugins/echo/main.py", PLUGIN.into()),
        ]
    }

    fn owner(&self) -> String {
        "owner".into()
    }

    async fn ready(&self, gw: &Gateway) {
        let _ = self.dir.set(gw.home.join("plugins/echo"));
        connected(gw, Self::NAME).await;
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        let sender = if owner { "owner" } else { "eve" };
        self.deliver(
            json!({"channel": "echo", "id": self.next_id(), "chat": sender,
            "sender": sender, "text": text}),
        )
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str> {
        self.deliver(
            json!({"channel": "echo", "id": self.next_id(), "chat": "room1",
            "sender": "owner", "text": text, "group": true, "mentioned": mention}),
        );
        Ok(())
    }

    async fn serve_again(&self, _gw: &Gateway, id: &str) -> Result<(), &'static str> {
        // The plugin's platform delivers the same message again (same id).
        let params = self
            .sent
            .lock()
            .ok()
            .and_then(|s| s.get(id).cloned())
            .unwrap_or_else(|| panic!("{id} was never delivered"));
        delivers(self.dir(), &params);
        Ok(())
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        lines(self.dir(), "sent.jsonl", n)
            .await
            .into_iter()
            .map(|s| {
                let text = s["text"].as_str().unwrap_or_default().to_string();
                Reply {
                    to: s["chat"].as_str().unwrap_or_default().to_string(),
                    sent_len: text.chars().count(),
                    text,
                }
            })
            .collect()
    }
}
