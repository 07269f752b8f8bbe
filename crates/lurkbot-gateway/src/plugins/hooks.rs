//! Plugins' hooks (ARCHITECTURE.md §7d): `before_tool` asked before every tool call of the
//! gateway's agents, `message_received` told of every channel message; each bounded in time.
//! A hook that cannot answer — not running, crashed, too slow, a malformed answer — counts as
//! its `[plugins.<name>] on_failure` says: `deny` by default for `before_tool` (a policy that
//! cannot be asked does not let tools through), and a `message_received` failure is logged.

use std::time::Duration;

use lurkbot_agent::{BoxFuture, ToolHook};
use serde_json::{Value, json};

use crate::plugins::PluginHost;

/// How long a hook may take.
const HOOK_TIMEOUT: Duration = Duration::from_secs(5);

impl ToolHook for PluginHost {
    fn before_tool<'a>(
        &'a self,
        session: &'a str,
        tool: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            for plugin in self
                .plugins
                .iter()
                .filter(|p| p.manifest.hooks("before_tool"))
            {
                let name = plugin.manifest.name.as_str();
                let failed = |why: String| {
                    tracing::warn!(
                        plugin = name,
                        error = why.as_str(),
                        "before_tool hook failed"
                    );
                    if plugin.allows_on_failure(false) {
                        Ok(())
                    } else {
                        Err(format!(
                            "plugin {name}'s before_tool hook could not answer ({why}), and its on_failure is deny"
                        ))
                    }
                };
                let Some(peer) = plugin.running_peer() else {
                    failed("it is not running".into())?;
                    continue;
                };
                let params = json!({"session": session, "tool": tool, "args": args});
                match peer.request("hook.before_tool", params, HOOK_TIMEOUT).await {
                    Ok(answer) => match answer["allow"].as_bool() {
                        Some(true) => {}
                        Some(false) => {
                            let reason = answer["reason"].as_str().unwrap_or("no reason given");
                            return Err(format!("plugin {name} refused it: {reason}"));
                        }
                        None => failed("its answer has no allow".into())?,
                    },
                    Err(e) => failed(e.to_string())?,
                }
            }
            Ok(())
        })
    }
}

impl PluginHost {
    /// Tells the plugins with a `message_received` hook of a channel message (in the
    /// background: a slow hook never delays the answer).
    pub(crate) fn message_received(&self, channel: &str, sender: &str, text: &str) {
        for plugin in self
            .plugins
            .iter()
            .filter(|p| p.manifest.hooks("message_received"))
        {
            let Some(peer) = plugin.running_peer() else {
                continue;
            };
            let params = json!({"channel": channel, "sender": sender, "text": text});
            let name = plugin.manifest.name.clone();
            tokio::spawn(async move {
                if let Err(e) = peer
                    .request("hook.message_received", params, HOOK_TIMEOUT)
                    .await
                {
                    tracing::warn!(plugin = name.as_str(), error = %e, "message_received hook failed");
                }
            });
        }
    }
}
