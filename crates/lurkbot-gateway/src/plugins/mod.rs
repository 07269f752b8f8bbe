//! Plugins (ARCHITECTURE.md §7d): the owner's programs under `plugins/<name>/`, started by the
//! gateway when `[plugins.<name>] enabled = true`, each supervised on its own (`plugin.rs`) and
//! spoken to over protocol 1 (`rpc.rs`). What they provide joins the gateway's own paths:
//! channels the one channel path (`channel.rs`), hooks the message and tool paths (`hooks.rs`).
//! A plugin is never the model's: it cannot install one (`plugins/` is written only by hand),
//! enable or configure one (`config.toml` is the gate's `Settings` act).

mod channel;
mod hooks;
mod plugin;
mod rpc;

use std::sync::Arc;

use lurkbot_core::{Config, Home, Secrets};

pub(crate) use channel::PluginChannel;
pub(crate) use plugin::PluginStatus;

use plugin::Plugin;

/// The gateway's plugins.
#[derive(Default)]
pub(crate) struct PluginHost {
    plugins: Vec<Arc<Plugin>>,
    /// Installed plugins that could not be started, and why (shown in their status).
    refused: Vec<PluginStatus>,
}

impl PluginHost {
    /// Reads the plugins installed in `home`, registers the channels of those `config`
    /// enables, and starts them (each under its own supervisor).
    pub(crate) fn start(
        home: &Home,
        config: &Config,
        store: Option<lurkbot_state::Store>,
    ) -> Arc<Self> {
        let mut host = Self::default();
        // Every installed plugin's channels are known (enabled or not): a session with a
        // stranger on any of them is a third party's (`gate/origin.rs`).
        for found in lurkbot_core::find_plugins(home.root()) {
            for channel in found.manifest.iter().flat_map(|m| m.channels()) {
                lurkbot_core::register_plugin_channel(channel);
            }
        }
        lurkbot_core::mark_plugin_channels_registered();
        let enabled: Vec<&String> = config
            .plugins
            .iter()
            .filter(|(_, s)| s.enabled)
            .map(|(n, _)| n)
            .collect();
        if enabled.is_empty() {
            return Arc::new(host);
        }
        let secrets = Secrets::load(home);
        let redactor = lurkbot_term::Redactor::new(secrets.redaction_values());
        for found in lurkbot_core::find_plugins(home.root()) {
            let Some(settings) = config.plugins.get(&found.folder).filter(|s| s.enabled) else {
                continue;
            };
            let manifest = match found.manifest {
                Ok(m) => m,
                Err(e) => {
                    tracing::error!(
                        plugin = found.folder.as_str(),
                        error = e.as_str(),
                        "plugin not started"
                    );
                    host.refused.push(PluginStatus {
                        name: found.folder.clone(),
                        version: String::new(),
                        state: "failed",
                        pid: None,
                        restarts: 0,
                        provides: Vec::new(),
                        last_error: Some(e),
                    });
                    continue;
                }
            };
            let env: Vec<(String, String)> = manifest
                .env
                .iter()
                .filter_map(|k| Some((k.clone(), secrets.home_variable(k)?.to_string())))
                .collect();
            let plugin = Arc::new(Plugin::new(
                manifest,
                found.dir,
                settings.clone(),
                env,
                redactor.clone(),
                store.clone(),
            ));
            tokio::spawn(plugin.clone().supervise());
            host.plugins.push(plugin);
        }
        Arc::new(host)
    }

    /// Every plugin's state, the refused ones included.
    pub(crate) fn statuses(&self) -> Vec<PluginStatus> {
        let mut all: Vec<PluginStatus> = self.plugins.iter().filter_map(|p| p.status()).collect();
        all.extend(self.refused.iter().cloned());
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Whether any plugin has a `before_tool` hook (agents then ask it before every call).
    pub(crate) fn has_tool_hooks(&self) -> bool {
        self.plugins.iter().any(|p| p.manifest.hooks("before_tool"))
    }

    /// The plugin channel called `name`, if an enabled plugin provides it.
    pub(crate) fn channel(&self, name: &str) -> Option<Arc<PluginChannel>> {
        self.plugins
            .iter()
            .flat_map(|p| p.channels.iter())
            .find(|c| lurkbot_channels::Channel::name(&***c) == name)
            .cloned()
    }

    /// Stops every plugin (`shutdown`, then their stdin closed) and waits up to a few seconds.
    pub(crate) async fn stop_all(&self) {
        for plugin in &self.plugins {
            plugin.stop();
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(8);
        while self
            .plugins
            .iter()
            .any(|p| p.status().is_some_and(|s| s.state != "stopped"))
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}
