//! Reloading `config.toml` (and, through the agents made anew, the home's `.env`) while the
//! gateway runs: on SIGHUP, on the `gateway.reload` method, and so after `lurkbot config set`.
//!
//! The new file is validated first; a file with an error or an unknown key leaves the settings
//! in force untouched and the reason is logged and answered. Settings read only when the
//! gateway starts — its address, port, token, auth mode and connection limit — are reported as
//! needing a restart; everything else applies to each session's next turn.

use serde_json::{Value, json};

use lurkbot_core::{Config, RESTART_KEYS, layout};

use crate::state::AppState;

/// What a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadPlan {
    /// Dotted keys whose value changed.
    pub changed: Vec<String>,
    /// Changed keys that need a restart to take effect.
    pub restart: Vec<String>,
}

impl ReloadPlan {
    /// The `gateway.reload` answer (OpenClaw's shape: `ok`, `mode`, `plan`).
    pub fn to_json(&self) -> Value {
        let mode = if self.restart.is_empty() {
            "hot"
        } else {
            "restart"
        };
        json!({
            "ok": true,
            "mode": mode,
            "plan": {
                "changedPaths": self.changed,
                "restartGateway": !self.restart.is_empty(),
                "restartReasons": self.restart.iter()
                    .map(|k| format!("{k} is read only when the gateway starts"))
                    .collect::<Vec<_>>(),
                "hotReasons": self.changed.iter()
                    .filter(|k| !self.restart.contains(k))
                    .collect::<Vec<_>>(),
            }
        })
    }
}

/// Why a reload kept the settings in force.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config.toml was not reloaded (the settings in force are kept): {0}")]
pub struct ReloadError(pub String);

impl AppState {
    /// Re-reads `config.toml`, validates it and puts it in force.
    ///
    /// # Errors
    /// [`ReloadError`] when the file cannot be read or has problems; nothing changes then.
    pub fn reload(&self) -> Result<ReloadPlan, ReloadError> {
        let path = self.home.join(layout::CONFIG);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(self.refused(format!("cannot read {}: {e}", path.display()))),
        };
        let (config, problems) =
            Config::check(&path, &text).map_err(|e| self.refused(e.to_string()))?;
        if let Some(first) = problems.first() {
            return Err(self.refused(first.message.clone()));
        }
        let before = self.config();
        let changed = changed_keys(&before, &config);
        let restart: Vec<String> = changed
            .iter()
            .filter(|k| needs_restart(k))
            .cloned()
            .collect();
        if let Some(hook) = self.reload_hook() {
            hook(&config);
        }
        self.replace_config(config);
        tracing::info!(
            changed = changed.join(",").as_str(),
            needs_restart = restart.join(",").as_str(),
            "config reloaded"
        );
        Ok(ReloadPlan { changed, restart })
    }

    fn refused(&self, reason: String) -> ReloadError {
        tracing::error!(
            reason,
            "config reload refused; the settings in force are kept"
        );
        ReloadError(reason)
    }
}

/// The dotted keys whose values differ (compared leaf by leaf).
/// Whether a changed key is read only at start: one of [`RESTART_KEYS`] or below one.
fn needs_restart(key: &str) -> bool {
    RESTART_KEYS.iter().any(|r| {
        key == *r
            || key
                .strip_prefix(r)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

fn changed_keys(before: &Config, after: &Config) -> Vec<String> {
    let (Ok(a), Ok(b)) = (serde_json::to_value(before), serde_json::to_value(after)) else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    diff("", &a, &b, &mut changed);
    changed
}

fn diff(prefix: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                diff(
                    &key,
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        _ if a != b => out.push(prefix.to_string()),
        _ => {}
    }
}

/// `gateway.reload` → OpenClaw's `{ok, mode, plan}`; a refused reload is `UNAVAILABLE` with
/// the reason (the settings in force are kept).
pub(crate) fn gateway_reload(
    state: &AppState,
    _params: &serde_json::Value,
) -> Result<serde_json::Value, crate::protocol::MethodError> {
    state.reload().map(|plan| plan.to_json()).map_err(|e| {
        crate::protocol::MethodError::new(crate::protocol::ErrorCode::Unavailable, e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_keys_are_the_leaves_that_differ() {
        let mut after = Config::default();
        after.agent.model = Some("openai/gpt-4o".into());
        after.gateway.port = 1;
        after.agents.insert("work".into(), Default::default());
        let changed = changed_keys(&Config::default(), &after);
        assert_eq!(changed, ["agent.model", "agents.work", "gateway.port"]);
    }

    #[test]
    fn mcp_servers_and_start_only_keys_need_a_restart() {
        let mut after = Config::default();
        after
            .mcp
            .servers
            .insert("calc".into(), lurkbot_core::McpServerConfig::default());
        let changed = changed_keys(&Config::default(), &after);
        assert_eq!(changed, ["mcp.servers.calc"]);
        assert!(needs_restart(&changed[0]));
        assert!(needs_restart("gateway.port"));
        assert!(!needs_restart("agent.model") && !needs_restart("mcpx"));
    }
}
