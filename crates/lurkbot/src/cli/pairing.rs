//! `lurkbot pairing list [--json] | approve <channel> <code> | deny <channel> <code>`: the
//! strangers who asked to talk to the agent on a channel (`dm_policy = "pairing"`), and the
//! owner's answer. `list --json` prints `[{channel, sender, name, code, requestedAtMs}]`.

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_channels::pairing::PairingStore;
use lurkbot_core::Home;

/// `lurkbot pairing`.
#[derive(Debug, Subcommand)]
pub(crate) enum PairingArgs {
    /// The requests waiting (codes expire after an hour).
    List {
        /// `[{channel, sender, name, code, requestedAtMs}]`.
        #[arg(long)]
        json: bool,
    },
    /// Let the sender with this code talk to the agent.
    Approve {
        /// The channel (`telegram`).
        channel: String,
        /// The code the sender was sent.
        code: String,
    },
    /// Refuse the request (the sender may ask again later).
    Deny {
        /// The channel.
        channel: String,
        /// The code.
        code: String,
    },
}

pub(crate) fn run(home_path: &Path, args: &PairingArgs) -> CliResult {
    let home = Home::open(home_path)?;
    // With the state in PostgreSQL the pairings are there (ARCHITECTURE.md §6.3).
    let config = lurkbot_core::Config::load(&home.config_path()).unwrap_or_default();
    lurkbot_agent::setup::attach_state(&home, &config)
        .map_err(|e| CliError::failed("pairing", e.to_string()))?;
    let store = PairingStore::open(&home);
    let now = lurkbot_core::now_ms();
    let failed = |e: lurkbot_channels::pairing::PairingError| match e {
        lurkbot_channels::pairing::PairingError::NotFound { .. } => {
            CliError::usage("pairing", e.to_string())
        }
        other => CliError::failed("pairing", other.to_string()),
    };
    match args {
        PairingArgs::List { json } => {
            let pending = store.pending(now).map_err(failed)?;
            if *json {
                crate::run::print_stdout(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&pending)?
                ))?;
                return Ok(());
            }
            let mut out = format!("{} pending pairing(s)\n", pending.len());
            for p in &pending {
                let minutes = now.saturating_sub(p.requested_at_ms) / 60_000;
                out.push_str(&format!(
                    "{:<10} {:<10} {} ({}), {minutes} min ago\n",
                    p.channel, p.code, p.name, p.sender
                ));
            }
            crate::run::print_stdout(&out)?;
        }
        PairingArgs::Approve { channel, code } => {
            let p = store.approve(channel, code, now).map_err(failed)?;
            crate::run::print_stdout(&format!(
                "approved {} ({}) on {}: their next message is answered\n",
                p.name, p.sender, p.channel
            ))?;
        }
        PairingArgs::Deny { channel, code } => {
            let p = store.deny(channel, code, now).map_err(failed)?;
            crate::run::print_stdout(&format!(
                "denied {} ({}) on {}\n",
                p.name, p.sender, p.channel
            ))?;
        }
    }
    Ok(())
}
