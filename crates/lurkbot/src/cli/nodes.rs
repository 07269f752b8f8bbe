//! `lurkbot nodes list [--json] | invoke NODE COMMAND [--params JSON] [--json]`: the paired
//! nodes of this home's gateway and a command sent to one (ARCHITECTURE.md §5.2). The owner's
//! own invocation needs no further approval (the owner is the human) but takes the gateway's
//! one path for node commands, logged in `logs/nodes.jsonl`. `list --json` prints
//! `[{id, name, connected, commands}]`; `invoke --json` prints `{ok, payload}` or
//! `{ok: false, error: {code, message}}` and exits 1 when the node reports a failure; without
//! `--json` a terminal run on a LurkBot node prints its stdout and stderr and exits with its
//! exit code, as `lurkbot exec` does.

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_core::Home;
use serde_json::{Value, json};

use super::remote::call_home_gateway;

/// `lurkbot nodes`.
#[derive(Debug, Subcommand)]
pub(crate) enum NodesArgs {
    /// The approved nodes, connected or not, with their commands.
    List {
        /// `[{id, name, connected, commands}]`.
        #[arg(long)]
        json: bool,
    },
    /// Send one command to a node and print its answer.
    #[command(
        after_help = "Examples:\n  lurkbot nodes invoke laptop system.run --params '{\"command\": \"help\"}'\n  lurkbot nodes invoke laptop device.info --json"
    )]
    Invoke {
        /// The node: its name, id, or a unique id prefix.
        node: String,
        /// The command (`system.run`, `system.which`, `device.info`, …).
        command: String,
        /// The command's parameters, a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        params: String,
        /// How long to wait for the node's answer.
        #[arg(long, value_name = "MS", default_value_t = 30_000)]
        timeout_ms: u64,
        /// Print `{ok, payload}` or `{ok: false, error}`.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(home_path: &Path, args: &NodesArgs) -> CliResult {
    let home = Home::open(home_path)?;
    match args {
        NodesArgs::List { json } => {
            let answer = call_home_gateway(&home, "nodes", "node.list", json!({}))?;
            let nodes: Vec<Value> = answer["nodes"]
                .as_array()
                .map(|all| {
                    all.iter()
                        .map(|n| {
                            json!({"id": n["id"], "name": n["name"],
                            "connected": n["connected"], "commands": n["commands"]})
                        })
                        .collect()
                })
                .unwrap_or_default();
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&nodes)?))?;
                return Ok(());
            }
            let mut out = format!("{} node(s)\n", nodes.len());
            for n in &nodes {
                let commands: Vec<&str> = n["commands"]
                    .as_array()
                    .map(|c| c.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{:<20} {:<13} {}\n",
                    n["name"].as_str().unwrap_or(""),
                    if n["connected"] == true {
                        "connected"
                    } else {
                        "disconnected"
                    },
                    commands.join(", ")
                ));
            }
            crate::run::print_stdout(&out)?;
        }
        NodesArgs::Invoke {
            node,
            command,
            params,
            timeout_ms,
            json,
        } => {
            let params: Value = serde_json::from_str(params).map_err(|e| {
                CliError::usage(
                    "nodes",
                    format!("--params is not JSON ({e}); e.g. '{{\"command\": \"help\"}}'"),
                )
            })?;
            if !params.is_object() {
                return Err(CliError::usage("nodes", "--params must be a JSON object"));
            }
            let answer = call_home_gateway(
                &home,
                "nodes",
                "node.invoke",
                json!({"node": node, "command": command, "params": params, "timeoutMs": timeout_ms}),
            )?;
            let ok = answer["ok"] == true;
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&answer)?))?;
            } else if ok {
                let payload = &answer["payload"];
                if command == "system.run" && payload.get("exitCode").is_some() {
                    // A LurkBot node's terminal run: its output as `lurkbot exec` prints it.
                    let text = |k: &str| payload[k].as_str().unwrap_or("").to_string();
                    crate::run::print_stdout(&text("stdout"))?;
                    eprint!("{}", text("stderr"));
                    let code = payload["exitCode"].as_u64().unwrap_or(1);
                    return crate::error::status(u8::try_from(code).unwrap_or(1));
                }
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(payload)?))?;
            }
            if !ok {
                let code = answer
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let message = answer
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if *json {
                    return Err(CliError::Status(1));
                }
                return Err(CliError::failed(
                    "nodes",
                    format!("the node answered {code}: {message}"),
                ));
            }
        }
    }
    Ok(())
}
