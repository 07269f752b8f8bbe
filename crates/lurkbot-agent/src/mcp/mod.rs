//! MCP in both directions (ARCHITECTURE.md §7). The client side: [`McpHub`] holds the servers of
//! `[mcp.servers.<name>]`, started together when the hub starts (stdio programs or streamable
//! HTTP endpoints, spoken to by `rpc.rs`); their tools join the agent's as `<server>__<tool>` in
//! `group:plugins`, under the same policy, approvals, redaction and untrusted labelling as every
//! tool. A server's failures are its own: reported to the model as a tool error and in
//! `lurkbot mcp list`, never a stuck turn. The server side is [`serve`].

mod content;
mod rpc;
pub mod serve;
mod slot;

use std::sync::Arc;

use lurkbot_core::{Home, McpConfig, Secrets, layout};
use lurkbot_llm::ToolSpec;
use serde::Serialize;
use serde_json::Value;

use crate::tools::ToolOutput;
use slot::Slot;
pub use slot::State;

/// Environment variables a stdio server inherits from LurkBot (nothing else does: provider
/// keys and other secrets stay out of plugins unless `env` passes them).
const INHERITED: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"];
/// Longest tool name model APIs accept.
const NAME_MAX: usize = 64;

/// One server as `lurkbot mcp list --json` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    /// The name in `[mcp.servers.<name>]`.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// `ready`, `failed`, `disabled`, `idle` or `starting`.
    pub state: &'static str,
    /// Its tools as the model sees them.
    pub tools: Vec<ToolReport>,
    /// Why it failed.
    pub error: Option<String>,
}

/// One tool of a server.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReport {
    /// `<server>__<tool>`.
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    /// Its description.
    pub description: String,
}

/// The configured MCP servers of one process.
pub struct McpHub {
    slots: Vec<Arc<Slot>>,
}

/// `<server>__<tool>` with characters model APIs refuse replaced by `_`, at most 64.
fn exposed_name(server: &str, tool: &str) -> String {
    let name: String = format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.chars().take(NAME_MAX).collect()
}

/// A stdio server's environment: [`INHERITED`] plus its `env`, where `${NAME}` is read from the
/// home's `.env`.
fn environment(
    server: &str,
    env: &std::collections::BTreeMap<String, String>,
    secrets: &Secrets,
) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = INHERITED
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    for (key, value) in env {
        let value = match value
            .strip_prefix("${")
            .and_then(|v| v.strip_suffix('}'))
        {
            Some(var) => secrets.home_variable(var).map(str::to_string).ok_or_else(|| {
                format!(
                    "mcp.servers.{server}.env.{key} names ${{{var}}}, which is not in the home's .env: add {var}=… there"
                )
            })?,
            None => value.clone(),
        };
        out.push((key.clone(), value));
    }
    Ok(out)
}

impl McpHub {
    /// The servers of `config` (none started yet).
    pub fn new(home: &Home, config: &McpConfig) -> Arc<Self> {
        let secrets = Secrets::load(home);
        let redactor = lurkbot_term::Redactor::new(secrets.redaction_values());
        let slots = config
            .servers
            .iter()
            .map(|(name, server)| {
                Arc::new(Slot::new(
                    name.clone(),
                    server.clone(),
                    environment(name, &server.env, &secrets),
                    home.join(layout::WORKSPACE),
                    redactor.clone(),
                ))
            })
            .collect();
        Arc::new(Self { slots })
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Starts every enabled server at once and waits until each is ready or has failed (each
    /// within its `startup_timeout_seconds`).
    pub async fn start(&self) {
        let tasks: Vec<_> = self
            .slots
            .iter()
            .filter(|s| s.status().state != State::Disabled)
            .map(|slot| {
                let slot = slot.clone();
                tokio::spawn(async move {
                    let _ = slot.peer().await;
                })
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        for slot in &self.slots {
            slot.shutdown().await;
        }
    }

    /// The tools to offer: those last listed by each server (a failed server's too, so that
    /// calling one starts it again). A failed server with no known tools is started again in
    /// the background when its back-off is over; its tools come with a later turn.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for slot in &self.slots {
            if slot.due_for_retry()
                && let Ok(runtime) = tokio::runtime::Handle::try_current()
            {
                let slot = slot.clone();
                runtime.spawn(async move {
                    let _ = slot.peer().await;
                });
            }
            for tool in slot.status().tools {
                specs.push(ToolSpec {
                    name: exposed_name(&slot.name, &tool.name),
                    description: format!(
                        "{} (from the MCP server '{}')",
                        tool.description.as_deref().unwrap_or_default(),
                        slot.name
                    ),
                    parameters: tool.input_schema.clone(),
                });
            }
        }
        specs
    }

    /// Calls the tool exposed as `name`; `None` when no server has such a tool.
    pub async fn call(&self, name: &str, args: &Value) -> Option<ToolOutput> {
        let (slot, tool) = self.slots.iter().find_map(|slot| {
            slot.status()
                .tools
                .iter()
                .find(|t| exposed_name(&slot.name, &t.name).eq_ignore_ascii_case(name))
                .map(|t| (slot.clone(), t.name.to_string()))
        })?;
        Some(match slot.call(&tool, args).await {
            Ok(result) => content::output(&result),
            Err(message) => ToolOutput::error(message),
        })
    }

    /// Every server, as `lurkbot mcp list` shows it.
    pub fn report(&self) -> Vec<ServerReport> {
        self.slots
            .iter()
            .map(|slot| {
                let status = slot.status();
                ServerReport {
                    name: slot.name.clone(),
                    transport: if slot.config.url.is_some() {
                        "http"
                    } else {
                        "stdio"
                    },
                    state: status.state.name(),
                    tools: status
                        .tools
                        .iter()
                        .map(|t| ToolReport {
                            name: exposed_name(&slot.name, &t.name),
                            tool: t.name.to_string(),
                            description: t.description.as_deref().unwrap_or_default().to_string(),
                        })
                        .collect(),
                    error: status.error,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_names_are_what_model_apis_accept() {
        assert_eq!(exposed_name("calc", "add"), "calc__add");
        assert_eq!(exposed_name("fs", "read file/v2"), "fs__read_file_v2");
        assert_eq!(exposed_name("s", &"x".repeat(100)).len(), NAME_MAX);
    }

    #[test]
    fn env_values_name_the_home_env_never_the_process() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(home.join(".env"), "CALC_TOKEN=t0k3n\n").unwrap_or_else(|e| panic!("{e}"));
        let secrets = Secrets::load(&home);
        let env = std::collections::BTreeMap::from([
            ("TOKEN".to_string(), "${CALC_TOKEN}".to_string()),
            ("MODE".to_string(), "fast".to_string()),
        ]);
        let made = environment("calc", &env, &secrets).unwrap_or_default();
        assert!(made.contains(&("TOKEN".into(), "t0k3n".into())));
        assert!(made.contains(&("MODE".into(), "fast".into())));
        assert!(made.iter().all(|(k, _)| k != "OPENAI_API_KEY"));
        let missing =
            std::collections::BTreeMap::from([("TOKEN".to_string(), "${NOT_THERE}".to_string())]);
        let error = environment("calc", &missing, &secrets).unwrap_err();
        assert!(error.contains("NOT_THERE"), "{error}");
    }
}
