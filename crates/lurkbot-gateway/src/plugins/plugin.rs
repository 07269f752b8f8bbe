//! One plugin, supervised (ARCHITECTURE.md §7d): started in its own folder with only the
//! environment it may have, greeted with `initialize`, served — its requests (`channel.receive`,
//! `host.log`, `host.state.*`) and notifications (`channel.status`) — and started again with a
//! back-off (1 s doubling to 60 s) whenever it exits, until the gateway stops it with
//! `shutdown`. Its stderr goes to the log, line by line, secret values masked.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lurkbot_core::{PluginManifest, PluginSettings};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Notify;

use crate::plugins::channel::{PeerSlot, PluginChannel, Wanted};
use crate::plugins::rpc::{Incoming, Peer};

/// What a plugin inherits of the gateway's environment (then only the `.env` names it lists).
const INHERITED: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"];
/// How long `initialize` may take.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `shutdown` and the exit after it may take before the process is killed.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest wait between two starts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Largest value `host.state.put` keeps.
const MAX_STATE_VALUE: usize = 1024 * 1024;

/// A plugin's state, as `lurkbot plugins status` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PluginStatus {
    pub(crate) name: String,
    pub(crate) version: String,
    /// `waiting` (a channel plugin whose channel another gateway holds), `starting`,
    /// `running`, `restarting` or `stopped`.
    pub(crate) state: &'static str,
    pub(crate) pid: Option<u32>,
    pub(crate) restarts: u64,
    pub(crate) provides: Vec<String>,
    pub(crate) last_error: Option<String>,
}

/// One enabled plugin.
pub(crate) struct Plugin {
    pub(crate) manifest: PluginManifest,
    dir: PathBuf,
    settings: PluginSettings,
    env: Vec<(String, String)>,
    /// Masks the home's secret values in what the plugin writes to the log.
    redactor: lurkbot_term::Redactor,
    store: Option<lurkbot_state::Store>,
    status: Mutex<PluginStatus>,
    pub(crate) peer: PeerSlot,
    pub(crate) channels: Vec<Arc<PluginChannel>>,
    /// Started at once when it provides hooks (every gateway asks them) or no channel; else
    /// when one of its channels first receives.
    wanted: Arc<Wanted>,
    stopping: AtomicBool,
    stop: Notify,
}

impl Plugin {
    /// Plugin `manifest` in `dir`, with its `settings`, the `.env` values it lists (`env`),
    /// what masks the secret values in its log lines (`redactor`) and the state store for its
    /// keys.
    pub(crate) fn new(
        manifest: PluginManifest,
        dir: PathBuf,
        settings: PluginSettings,
        env: Vec<(String, String)>,
        redactor: lurkbot_term::Redactor,
        store: Option<lurkbot_state::Store>,
    ) -> Self {
        let peer: PeerSlot = Arc::default();
        let wanted = Arc::new(Wanted::default());
        let channels: Vec<Arc<PluginChannel>> = manifest
            .channels()
            .filter_map(lurkbot_core::register_plugin_channel)
            .map(|name| Arc::new(PluginChannel::new(name, peer.clone(), wanted.clone())))
            .collect();
        let hooks = lurkbot_core::HOOK_EVENTS.iter().any(|e| manifest.hooks(e));
        let wanted_now = channels.is_empty() || hooks;
        if wanted_now {
            wanted.want();
        }
        let status = PluginStatus {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            state: if wanted_now { "starting" } else { "waiting" },
            pid: None,
            restarts: 0,
            provides: manifest.provides.clone(),
            last_error: None,
        };
        Self {
            manifest,
            dir,
            settings,
            env,
            redactor,
            store,
            status: Mutex::new(status),
            peer,
            channels,
            wanted,
            stopping: AtomicBool::new(false),
            stop: Notify::new(),
        }
    }

    /// Its state now.
    pub(crate) fn status(&self) -> Option<PluginStatus> {
        self.status.lock().ok().map(|s| s.clone())
    }

    /// The running process's connection, if it runs.
    pub(crate) fn running_peer(&self) -> Option<Arc<Peer>> {
        self.peer.lock().ok()?.clone().filter(|p| !p.is_closed())
    }

    /// What a failed hook counts as: `[plugins.<name>] on_failure`, else `default`.
    pub(crate) fn allows_on_failure(&self, default: bool) -> bool {
        match self.settings.on_failure.as_deref() {
            Some("allow") => true,
            Some("deny") => false,
            _ => default,
        }
    }

    fn update(&self, f: impl FnOnce(&mut PluginStatus)) {
        if let Ok(mut status) = self.status.lock() {
            f(&mut status);
        }
    }

    /// Runs the plugin until [`Plugin::stop`], starting it again whenever it exits.
    pub(crate) async fn supervise(self: Arc<Self>) {
        let name = self.manifest.name.clone();
        // A channel plugin waits for its channel's lease (`waiting` meanwhile).
        tokio::select! {
            () = self.wanted.wait() => {}
            () = self.stop.notified() => {
                self.update(|s| s.state = "stopped");
                return;
            }
        }
        let mut backoff = Duration::from_secs(1);
        loop {
            self.update(|s| s.state = "starting");
            let started = tokio::time::Instant::now();
            let ended = self.run_once().await;
            if let Ok(mut peer) = self.peer.lock() {
                *peer = None;
            }
            let why = ended.err().unwrap_or_else(|| "it exited".into());
            for channel in &self.channels {
                channel.plugin_gone(&why);
            }
            if self.stopping.load(Ordering::SeqCst) {
                self.update(|s| {
                    s.state = "stopped";
                    s.pid = None;
                });
                return;
            }
            tracing::warn!(
                plugin = name.as_str(),
                error = why.as_str(),
                "plugin stopped: starting it again"
            );
            self.update(|s| {
                s.state = "restarting";
                s.pid = None;
                s.restarts += 1;
                s.last_error = Some(why);
            });
            if started.elapsed() > MAX_BACKOFF {
                backoff = Duration::from_secs(1);
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = self.stop.notified() => {}
            }
            if self.stopping.load(Ordering::SeqCst) {
                self.update(|s| s.state = "stopped");
                return;
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Asks the plugin to stop (`shutdown`, then its stdin closed), and waits for it.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.stop.notify_waiters();
        self.stop.notify_one();
    }

    /// One process: started, greeted, served until it exits (the error says why) or is stopped.
    async fn run_once(&self) -> Result<(), String> {
        let name = self.manifest.name.as_str();
        let (program, args) = self
            .manifest
            .command
            .split_first()
            .ok_or("its command is empty")?;
        // A relative path with a slash (`.venv/bin/python`) is the plugin's own.
        let program = if program.contains('/') && !program.starts_with('/') {
            self.dir.join(program).display().to_string()
        } else {
            program.clone()
        };
        let mut command = tokio::process::Command::new(&program);
        command
            .args(args)
            .env_clear()
            .envs(
                INHERITED
                    .iter()
                    .filter_map(|k| Some((*k, std::env::var(k).ok()?))),
            )
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start '{program}': {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("its stdin or stdout could not be opened".into());
        };
        if let Some(stderr) = child.stderr.take() {
            let (plugin, redactor) = (name.to_string(), self.redactor.clone());
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let line: String = line.chars().take(2000).collect();
                    let line = redactor.text(&line);
                    tracing::info!(plugin = plugin.as_str(), stderr = line.as_str(), "plugin");
                }
            });
        }
        let (peer, mut incoming) = Peer::start(name, stdin, stdout);
        let config = serde_json::to_value(&self.settings.settings).unwrap_or(Value::Null);
        let hello = peer
            .request(
                "initialize",
                json!({"protocol": 1, "name": name, "config": config}),
                INITIALIZE_TIMEOUT,
            )
            .await
            .map_err(|e| format!("it did not answer initialize: {e}"))?;
        if hello["provides"].is_array() && hello["provides"] != json!(self.manifest.provides) {
            tracing::warn!(
                plugin = name,
                "the plugin provides other things than its manifest says: the manifest counts"
            );
        }
        peer.notify("initialized", json!({})).await;
        if let Ok(mut slot) = self.peer.lock() {
            *slot = Some(peer.clone());
        }
        self.update(|s| {
            s.state = "running";
            s.pid = child.id();
        });
        tracing::info!(plugin = name, "plugin running");
        loop {
            tokio::select! {
                message = incoming.recv() => match message {
                    Some(message) => self.handle(&peer, message).await,
                    None => break,
                },
                () = self.stop.notified() => {
                    let _ = peer.request("shutdown", json!({}), SHUTDOWN_TIMEOUT).await;
                    peer.close().await;
                    if tokio::time::timeout(SHUTDOWN_TIMEOUT, child.wait()).await.is_err() {
                        let _ = child.kill().await;
                    }
                    return Ok(());
                }
            }
        }
        // Its stdout ended: it is exiting (or must).
        let status = match tokio::time::timeout(SHUTDOWN_TIMEOUT, child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            _ => {
                let _ = child.kill().await;
                "its stdout closed; killed".into()
            }
        };
        Err(format!("it exited ({status})"))
    }

    /// One request or notification of the plugin.
    async fn handle(&self, peer: &Arc<Peer>, message: Incoming) {
        let name = self.manifest.name.as_str();
        let Some(id) = message.id else {
            if message.method == "channel.status" {
                let p = &message.params;
                let channel = p["channel"].as_str().unwrap_or_default();
                match self
                    .channels
                    .iter()
                    .find(|c| lurkbot_channels::Channel::name(&***c) == channel)
                {
                    Some(c) => c.set_status(
                        p["state"].as_str().unwrap_or("connecting"),
                        p["detail"].as_str().map(str::to_string),
                    ),
                    None => tracing::warn!(
                        plugin = name,
                        channel,
                        "a status for a channel the plugin does not provide"
                    ),
                }
            }
            return;
        };
        let params = &message.params;
        let answer = match message.method.as_str() {
            "channel.receive" => {
                let channel = params["channel"].as_str().unwrap_or_default();
                match self
                    .channels
                    .iter()
                    .find(|c| lurkbot_channels::Channel::name(&***c) == channel)
                {
                    // Answered once recorded.
                    Some(c) => return c.deliver(peer.clone(), id, params).await,
                    None => Err((
                        -32602,
                        format!(
                            "channel.receive: '{channel}' is not a channel this plugin provides"
                        ),
                    )),
                }
            }
            "host.log" => {
                // Masked as its stderr is: a value it was given never reaches the log.
                let text = self
                    .redactor
                    .text(params["message"].as_str().unwrap_or_default());
                match params["level"].as_str().unwrap_or("info") {
                    "error" => tracing::error!(plugin = name, "{text}"),
                    "warn" => tracing::warn!(plugin = name, "{text}"),
                    "debug" => tracing::debug!(plugin = name, "{text}"),
                    _ => tracing::info!(plugin = name, "{text}"),
                }
                Ok(json!({}))
            }
            "host.state.get" => self.state_get(params),
            "host.state.put" => self.state_put(params),
            other => Err((-32601, format!("method not found: {other}"))),
        };
        peer.respond(id, answer).await;
    }

    /// The store's name for the plugin's `key`: under its own name, so no plugin reaches
    /// another's keys.
    fn state_name(&self, params: &Value) -> Result<String, (i64, String)> {
        let key = params["key"].as_str().unwrap_or_default();
        let fine = (1..=128).contains(&key.len())
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b));
        if !fine {
            return Err((
                -32602,
                "a key is 1–128 of A–Z, a–z, 0–9, '.', '_', '-', ':'".into(),
            ));
        }
        Ok(format!("plugins/{}/state/{key}", self.manifest.name))
    }

    fn state_get(&self, params: &Value) -> Result<Value, (i64, String)> {
        let name = self.state_name(params)?;
        let store = self
            .store
            .as_ref()
            .ok_or((-32000, "the state store is not open".to_string()))?;
        let body = store.document(&name).map_err(|e| (-32000, e.to_string()))?;
        let value = body
            .and_then(|b| serde_json::from_str::<Value>(&b).ok())
            .unwrap_or(Value::Null);
        Ok(json!({"value": value}))
    }

    fn state_put(&self, params: &Value) -> Result<Value, (i64, String)> {
        let name = self.state_name(params)?;
        let store = self
            .store
            .as_ref()
            .ok_or((-32000, "the state store is not open".to_string()))?;
        let body = params
            .get("value")
            .cloned()
            .unwrap_or(Value::Null)
            .to_string();
        if body.len() > MAX_STATE_VALUE {
            return Err((-32602, "a value is at most 1 MiB of JSON".into()));
        }
        store
            .edit_document(&name, move |_| {
                Ok::<_, lurkbot_state::StateError>(lurkbot_state::Edit::replace(body, ()))
            })
            .map_err(|e| (-32000, e.to_string()))?
            .map_err(|e| (-32000, e.to_string()))?;
        Ok(json!({}))
    }
}
