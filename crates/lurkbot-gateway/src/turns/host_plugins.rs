//! The plugins the gateway lends its session host (started by `server.rs`, none for a user's
//! host): their channels join the channel path, their `before_tool` hooks the agents.

use std::sync::Arc;

use crate::plugins::PluginHost;
use crate::turns::host::SessionHost;

impl SessionHost {
    /// The plugins the gateway runs (none for a user's host).
    pub(crate) fn plugins(&self) -> Arc<PluginHost> {
        self.plugins.read().map(|p| p.clone()).unwrap_or_default()
    }

    /// Takes the plugins the gateway started.
    pub(crate) fn set_plugins(&self, plugins: Arc<PluginHost>) {
        if let Ok(mut slot) = self.plugins.write() {
            *slot = plugins;
        }
    }
}
