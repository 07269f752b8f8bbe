//! `lurkbot browser status|start|stop [--json]`: the owner's handle on the managed Chromium.
//! The browser lives in the running gateway (the process whose agent drives it, and whose exit
//! stops it), so these talk to that gateway as `lurkbot channels status` does.

use std::path::Path;

use clap::Subcommand;
use lurkbot_core::{Home, RunningGateway};
use lurkbot_gateway::protocol::method;
use serde_json::{Value, json};

use crate::error::{CliError, CliResult};

/// `lurkbot browser`.
#[derive(Debug, Subcommand)]
pub(crate) enum BrowserArgs {
    /// Whether Chromium runs, its tabs and memory, and the requests its proxy refused.
    Status {
        /// `{running, busy, pid, tabs, memoryBytes, blockedRequests, executable, enabled}`.
        #[arg(long)]
        json: bool,
    },
    /// Start Chromium now (the browser tool also starts it on first use).
    Start {
        /// The state after starting, as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop Chromium.
    Stop {
        /// The state after stopping, as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(home_path: &Path, args: &BrowserArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let (name, json) = match args {
        BrowserArgs::Status { json } => (method::BROWSER_STATUS, *json),
        BrowserArgs::Start { json } => (method::BROWSER_START, *json),
        BrowserArgs::Stop { json } => (method::BROWSER_STOP, *json),
    };
    let Some(addr) = RunningGateway::find(&home).and_then(|g| g.loopback_addr()) else {
        if matches!(args, BrowserArgs::Status { .. } | BrowserArgs::Stop { .. }) {
            // Nothing runs, so no browser does; stopping it has nothing to do (as `systemctl
            // stop` of a stopped unit succeeds).
            let mut stopped = json!({"running": false, "gateway": false});
            if matches!(args, BrowserArgs::Stop { .. }) {
                stopped["stopped"] = json!(false);
            }
            return print(&stopped, json);
        }
        return Err(CliError::failed(
            "browser",
            "no gateway is running for this home; the browser runs inside it (start it with lurkbot gateway)",
        ));
    };
    let token = super::remote::gateway_token(&home);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let answer = runtime.block_on(async {
        let mut gw = super::remote::Remote::connect(&format!("ws://{addr}/ws"), token.as_deref())
            .await
            .map_err(|e| CliError::failed("browser", format!("{e:#}")))?;
        gw.call(name, json!({}))
            .await
            .map_err(|e| CliError::failed("browser", format!("{e:#}")))?
            .map_err(|(code, message)| CliError::failed("browser", format!("{code}: {message}")))
    })?;
    print(&answer, json)
}

fn print(state: &Value, json: bool) -> CliResult {
    if json {
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(state)?))?;
        return Ok(());
    }
    let mut out = String::new();
    if let Some(note) = state["note"].as_str() {
        out.push_str(&format!("{note}\n"));
    }
    match state["stopped"].as_bool() {
        Some(true) => out.push_str("Chromium stopped.\n"),
        Some(false) => out.push_str("Chromium was not running: nothing to stop.\n"),
        None => {}
    }
    if state["running"] == true {
        #[allow(clippy::cast_precision_loss)]
        let mib = state["memoryBytes"].as_u64().unwrap_or(0) as f64 / 1_048_576.0;
        out.push_str(&format!(
            "running: pid {}, {} tab(s), {mib:.1} MiB PSS (Chromium and its helpers), {} request(s) refused\n",
            state["pid"], state["tabs"], state["blockedRequests"]
        ));
    } else if state["gateway"] == false {
        out.push_str("stopped (no gateway is running)\n");
    } else {
        out.push_str("stopped\n");
    }
    crate::run::print_stdout(&out)?;
    Ok(())
}
