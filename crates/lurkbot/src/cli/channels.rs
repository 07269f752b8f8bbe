//! `lurkbot channels list [--json]` (the configured channels and whether their credentials
//! are set — never their values) and `lurkbot channels status [--json]` (the running gateway's
//! view: state, last error, messages in and out, pending pairings, a linked device's link);
//! `login` / `logout` link WhatsApp's device (`channels_login.rs`); `login signal` links
//! signal-cli (`channels_login_signal.rs`).

use crate::error::CliResult;
use std::path::Path;

use clap::Subcommand;
use lurkbot_core::{Config, Home, layout};
use lurkbot_gateway::protocol::method;
use serde_json::{Value, json};

/// `lurkbot channels`.
#[derive(Debug, Subcommand)]
pub(crate) enum ChannelsArgs {
    /// The configured channels.
    List {
        /// `[{name, enabled, dmPolicy, allowFrom, credentials}]`.
        #[arg(long)]
        json: bool,
    },
    /// What the running gateway's channels are doing.
    Status {
        /// The gateway's `channels.status` answer.
        #[arg(long)]
        json: bool,
    },
    /// Link LurkBot as a device of a WhatsApp account (the QR code to scan), or link
    /// signal-cli to a Signal account (`signal`: its code, or what to run).
    Login {
        /// The channel (`whatsapp`, `signal`).
        channel: String,
        /// The account's number (`+15550001111`): a pairing code to type instead of a QR code.
        #[arg(long)]
        phone: Option<String>,
    },
    /// Unlink the WhatsApp device and forget its keys.
    Logout {
        /// The channel (`whatsapp`).
        channel: String,
    },
}

/// What channel `c` (named `name`) still lacks from the home's `.env`, said as `channels list`
/// shows it: the variables of [`lurkbot_channels::credentials::required_variables`] (the
/// shared list `doctor` and the gateway use), alternatives in brackets; Matrix also needs its
/// homeserver unless `base_url` names it.
fn missing_credentials(
    name: &str,
    c: &lurkbot_core::ChannelConfig,
    vars: &impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let ways = lurkbot_channels::credentials::required_variables(name, c.mode.as_deref());
    let mut missing = Vec::new();
    if name == "matrix" && c.base_url.is_none() && vars("MATRIX_HOMESERVER").is_none() {
        missing.push("MATRIX_HOMESERVER".to_string());
    }
    if !ways.is_empty() && !ways.iter().any(|way| way.iter().all(|v| vars(v).is_some())) {
        let first: Vec<&str> = ways[0]
            .iter()
            .copied()
            .filter(|v| vars(v).is_none())
            .collect();
        let mut said = first.join(", ");
        for other in &ways[1..] {
            said.push_str(&format!(" (or {})", other.join(" and ")));
        }
        missing.push(said);
    }
    missing
}

pub(crate) fn run(home_path: &Path, args: &ChannelsArgs) -> CliResult {
    match args {
        ChannelsArgs::Login { channel, .. } if channel == "signal" => {
            return super::channels_login_signal::login(home_path);
        }
        ChannelsArgs::Login { channel, phone } => {
            return super::channels_login::login(home_path, channel, phone.as_deref());
        }
        ChannelsArgs::Logout { channel } => {
            return super::channels_login::logout(home_path, channel);
        }
        _ => {}
    }
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    match args {
        ChannelsArgs::List { json } => {
            let vars = lurkbot_agent::setup::variables(&home);
            let list: Vec<Value> = config
                .channels
                .iter()
                .map(|(name, c)| {
                    let missing = missing_credentials(name, c, &vars);
                    json!({"name": name, "enabled": c.enabled, "dmPolicy": c.dm_policy,
                        "allowFrom": c.allow_from, "requireMention": c.require_mention,
                        "credentials": if missing.is_empty() { "set".to_string() }
                            else { format!("missing {}", missing.join(", ")) }})
                })
                .collect();
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&list)?))?;
                return Ok(());
            }
            let mut out = format!("{} channel(s)\n", list.len());
            for c in &list {
                out.push_str(&format!(
                    "{:<10} {:<8} dm_policy={:<9} credentials {}\n",
                    c["name"].as_str().unwrap_or_default(),
                    if c["enabled"] == true {
                        "enabled"
                    } else {
                        "disabled"
                    },
                    c["dmPolicy"].as_str().unwrap_or_default(),
                    c["credentials"].as_str().unwrap_or_default()
                ));
            }
            crate::run::print_stdout(&out)?;
        }
        ChannelsArgs::Status { json } => {
            let status = super::remote::call_home_gateway(
                &home,
                "channels",
                method::CHANNELS_STATUS,
                json!({}),
            )?;
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&status)?))?;
                return Ok(());
            }
            let mut out = String::new();
            for c in status["channels"].as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "{:<10} {:<12} in {} out {} pending pairings {}{}\n",
                    c["name"].as_str().unwrap_or_default(),
                    c["state"].as_str().unwrap_or_default(),
                    c["received"],
                    c["sent"],
                    c["pendingPairings"],
                    c["lastError"]
                        .as_str()
                        .map(|e| format!("  last error: {e}"))
                        .unwrap_or_default()
                ));
                if let Some(link) = c["link"]["state"].as_str() {
                    out.push_str(&format!(
                        "{:<10} device {link}{}\n",
                        "",
                        c["link"]["account"]
                            .as_str()
                            .map(|a| format!(" as {a}"))
                            .unwrap_or_default()
                    ));
                }
            }
            if out.is_empty() {
                out.push_str("no channels are configured: add a [channels.<name>] section to config.toml (telegram, discord, slack, matrix, email, irc) and its credentials to .env\n");
            }
            crate::run::print_stdout(&out)?;
        }
        ChannelsArgs::Login { .. } | ChannelsArgs::Logout { .. } => {}
    }
    Ok(())
}
