//! `lurkbot devices list [--json] | approve ID | reject ID`: the devices that asked to join this
//! home's gateway as nodes, and the owner's decision (ARCHITECTURE.md §5.2). Served by the
//! running gateway, which holds the store (`devices/paired.json`) and closes a rejected
//! device's connection at once. `ID` is a device id, a unique prefix of 6 or more characters,
//! or a unique name. `list --json` prints `[{id, name, platform, role, state, requestedAtMs}]`.

use crate::error::CliResult;
use std::path::Path;

use clap::Subcommand;
use lurkbot_core::Home;
use serde_json::{Value, json};

use super::remote::call_home_gateway;

/// `lurkbot devices`.
#[derive(Debug, Subcommand)]
pub(crate) enum DevicesArgs {
    /// Every device that asked, with its state (pending, approved, rejected).
    List {
        /// `[{id, name, platform, role, state, requestedAtMs}]`.
        #[arg(long)]
        json: bool,
    },
    /// Let the device serve as a node (it connects without asking again).
    Approve {
        /// Device id, unique id prefix (6+ characters) or unique name.
        id: String,
    },
    /// Refuse the device, or revoke an approved one: its connection is closed and its
    /// connects are refused until it is approved.
    Reject {
        /// Device id, unique id prefix (6+ characters) or unique name.
        id: String,
    },
}

pub(crate) fn run(home_path: &Path, args: &DevicesArgs) -> CliResult {
    let home = Home::open(home_path)?;
    match args {
        DevicesArgs::List { json } => {
            let answer = call_home_gateway(&home, "devices", "device.pair.list", json!({}))?;
            let devices = answer["devices"].as_array().cloned().unwrap_or_default();
            if *json {
                crate::run::print_stdout(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&devices)?
                ))?;
                return Ok(());
            }
            let mut out = format!("{} device(s)\n", devices.len());
            for d in &devices {
                let text = |k: &str| d[k].as_str().unwrap_or("").to_string();
                out.push_str(&format!(
                    "{:<9} {:<20} {:<8} {}\n",
                    text("state"),
                    text("name"),
                    text("platform"),
                    text("id")
                ));
            }
            for d in &devices {
                if let Some(more) = d["unapprovedCommands"].as_array() {
                    let names: Vec<&str> = more.iter().filter_map(Value::as_str).collect();
                    out.push_str(&format!(
                        "{} asks for more commands ({}): lurkbot devices approve {} allows them\n",
                        d["name"].as_str().unwrap_or(""),
                        names.join(", "),
                        d["id"].as_str().unwrap_or("")
                    ));
                }
            }
            if devices.iter().any(|d| d["state"] == "pending") {
                out.push_str("approve one with: lurkbot devices approve ID\n");
            }
            crate::run::print_stdout(&out)?;
        }
        DevicesArgs::Approve { id } | DevicesArgs::Reject { id } => {
            let (method, done) = match args {
                DevicesArgs::Approve { .. } => ("device.pair.approve", "approved"),
                _ => ("device.pair.reject", "rejected"),
            };
            let answer = call_home_gateway(&home, "devices", method, json!({"deviceId": id}))?;
            let device = &answer["device"];
            let text = |v: &Value| v.as_str().unwrap_or("").to_string();
            crate::run::print_stdout(&format!(
                "{done} {} ({})\n",
                text(&device["name"]),
                text(&device["id"])
            ))?;
        }
    }
    Ok(())
}
