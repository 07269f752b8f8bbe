//! `lurkbot plugins list|status|enable|disable [--json]` (ARCHITECTURE.md §7d): the plugins
//! installed under the home's `plugins/` (what each provides, whether it is enabled, what is
//! wrong with its manifest), what the running gateway's plugins are doing, and the owner's
//! switch (`[plugins.<name>] enabled`, written as `lurkbot config set` writes; a running
//! gateway starts or stops it at its next start).

use std::path::Path;

use clap::Subcommand;
use lurkbot_core::{Config, ConfigDoc, Home, layout};
use lurkbot_gateway::protocol::method;
use serde_json::{Value, json};

use crate::error::{CliError, CliResult};

/// `lurkbot plugins`.
#[derive(Debug, Subcommand)]
pub(crate) enum PluginsArgs {
    /// The plugins installed under plugins/.
    List {
        /// `[{name, version, description, provides, enabled, problem}]`.
        #[arg(long)]
        json: bool,
    },
    /// What the running gateway's plugins are doing.
    Status {
        /// The gateway's `plugins.status` answer.
        #[arg(long)]
        json: bool,
    },
    /// Let the gateway start an installed plugin (`[plugins.<name>] enabled = true`).
    Enable {
        /// The plugin (its folder under plugins/).
        name: String,
    },
    /// Stop the gateway starting a plugin.
    Disable {
        /// The plugin.
        name: String,
    },
}

pub(crate) fn run(home_path: &Path, args: &PluginsArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let path = home.join(layout::CONFIG);
    match args {
        PluginsArgs::List { json } => {
            let config = Config::load(&path)?;
            let list: Vec<Value> = lurkbot_core::find_plugins(home.root())
                .into_iter()
                .map(|found| {
                    let enabled = config.plugins.get(&found.folder).is_some_and(|s| s.enabled);
                    match found.manifest {
                        Ok(m) => json!({"name": m.name, "version": m.version,
                            "description": m.description, "provides": m.provides,
                            "enabled": enabled, "problem": null}),
                        Err(e) => json!({"name": found.folder, "version": null,
                            "description": "", "provides": [], "enabled": enabled,
                            "problem": e}),
                    }
                })
                .collect();
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&list)?))?;
                return Ok(());
            }
            let mut out = String::new();
            for p in &list {
                let provides: Vec<&str> = p["provides"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                out.push_str(&format!(
                    "{:<16} {:<8} {:<9} {}{}\n",
                    p["name"].as_str().unwrap_or_default(),
                    p["version"].as_str().unwrap_or("-"),
                    if p["enabled"] == true {
                        "enabled"
                    } else {
                        "disabled"
                    },
                    provides.join(", "),
                    p["problem"]
                        .as_str()
                        .map(|e| format!("  problem: {e}"))
                        .unwrap_or_default()
                ));
            }
            if out.is_empty() {
                out.push_str("no plugins are installed: put one in plugins/<name>/ with its lurkbot-plugin.toml (docs/guide/plugins.md)\n");
            }
            crate::run::print_stdout(&out)?;
        }
        PluginsArgs::Status { json } => {
            let status = super::remote::call_home_gateway(
                &home,
                "plugins",
                method::PLUGINS_STATUS,
                json!({}),
            )?;
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&status)?))?;
                return Ok(());
            }
            let mut out = String::new();
            for p in status["plugins"].as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "{:<16} {:<10} restarts {}{}\n",
                    p["name"].as_str().unwrap_or_default(),
                    p["state"].as_str().unwrap_or_default(),
                    p["restarts"],
                    p["lastError"]
                        .as_str()
                        .map(|e| format!("  last error: {e}"))
                        .unwrap_or_default()
                ));
            }
            if out.is_empty() {
                out.push_str("the gateway runs no plugins: enable one with lurkbot plugins enable NAME, then restart the gateway\n");
            }
            crate::run::print_stdout(&out)?;
        }
        PluginsArgs::Enable { name } | PluginsArgs::Disable { name } => {
            let enable = matches!(args, PluginsArgs::Enable { .. });
            let installed = lurkbot_core::find_plugins(home.root())
                .into_iter()
                .find(|p| p.folder == *name);
            match installed {
                None if enable => {
                    return Err(CliError::failed(
                        "plugins",
                        format!(
                            "no plugin '{name}' is installed: put it in plugins/{name}/ with its lurkbot-plugin.toml"
                        ),
                    ));
                }
                Some(found) if enable => {
                    if let Err(e) = found.manifest {
                        return Err(CliError::failed(
                            "plugins",
                            format!("'{name}' cannot be enabled: {e}"),
                        ));
                    }
                }
                _ => {}
            }
            let mut doc = ConfigDoc::load(&path)?;
            doc.set(
                &format!("plugins.{name}.enabled"),
                if enable { "true" } else { "false" },
            )?;
            doc.save()?;
            crate::run::print_stdout(&format!(
                "{} {name}: the gateway {} it at its next start (lurkbot gateway restart)\n",
                if enable { "enabled" } else { "disabled" },
                if enable { "starts" } else { "no longer starts" },
            ))?;
        }
    }
    Ok(())
}
