//! `lurkbot node run --gateway URL [--token T] [--name N]`: this machine serves another
//! gateway as a node (ARCHITECTURE.md §5.2). Its identity — an Ed25519 key made on first run —
//! is kept in this home (`devices/identity.json`, 0600, secret to every tool); it signs each
//! connect's challenge, and the gateway's owner approves the device once. It offers:
//!
//! - `system.run {command, stdin?, timeoutMs?}`: one of this home's `terminal_exec` commands —
//!   no shell — audited in this home like every run. A command this home's `[approvals]` hold
//!   (one carrying `--confirm`, by default) runs only when the gateway says its human approved
//!   it (`approved: true`); otherwise nothing runs and the answer says why.
//! - `system.which {bins}`: which of the names are terminal commands here.
//! - `device.info`: name, platform, version and the terminal commands.
//!
//! Every invocation is appended to `logs/node.jsonl` here. The token comes from `--token` or
//! `LURKBOT_GATEWAY_TOKEN` (environment or this home's `.env`). A lost connection is retried
//! with back-off (1 s doubling to 30 s); a refused connect (a wrong token, a rejected device)
//! ends the command.

mod host;

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::{Args, Subcommand};
use lurkbot_core::Home;

/// `lurkbot node`.
#[derive(Debug, Subcommand)]
pub(crate) enum NodeArgs {
    /// Serve a gateway as a node until interrupted.
    Run(RunArgs),
}

/// Flags of `lurkbot node run`.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  lurkbot node run --gateway ws://192.168.1.10:18789 --name laptop\n\nOn the gateway's machine the owner then runs: lurkbot devices approve laptop"
)]
pub(crate) struct RunArgs {
    /// The gateway's address (`ws://HOST:PORT` or `http://HOST:PORT`).
    #[arg(long, value_name = "URL")]
    gateway: String,
    /// The gateway's token (default: LURKBOT_GATEWAY_TOKEN).
    #[arg(long, value_name = "T")]
    token: Option<String>,
    /// The name the gateway's owner sees (default: this machine's host name).
    #[arg(long, value_name = "N")]
    name: Option<String>,
}

pub(crate) fn run(home_path: &Path, args: &NodeArgs) -> CliResult {
    let NodeArgs::Run(args) = args;
    let home = Home::open(home_path)?;
    let url =
        super::remote::websocket_url(&args.gateway).map_err(|e| CliError::usage("node run", e))?;
    let token = args
        .token
        .clone()
        .or_else(|| lurkbot_agent::setup::variables(&home)("LURKBOT_GATEWAY_TOKEN"))
        .unwrap_or_default();
    let name = args
        .name
        .clone()
        .or_else(host_name)
        .unwrap_or_else(|| "lurkbot-node".into());
    let identity = host::identity(&home).map_err(|e| CliError::failed("node run", e))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(host::serve(
        host::Node::new(home, identity, name),
        &url,
        &token,
    ))
}

/// This machine's host name.
fn host_name() -> Option<String> {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
