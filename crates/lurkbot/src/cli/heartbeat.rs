//! `lurkbot heartbeat run [--json]`: one heartbeat now, in this process (ARCHITECTURE.md §7);
//! prints the `heartbeat` event. Exit 0 unless it `failed`.

use crate::error::{CliError, CliResult};
use std::path::Path;
use std::sync::Arc;

use clap::Subcommand;
use lurkbot_agent::heartbeat::{HeartbeatStatus, run_heartbeat};
use lurkbot_agent::{LocalRuntime, NoHuman};
use lurkbot_core::{Config, Home, layout};

/// The `heartbeat` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum HeartbeatArgs {
    /// Run one heartbeat now and print its outcome.
    Run {
        /// The event as one JSON object ({ts, status, reason?, preview?, durationMs?}).
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(home_path: &Path, args: &HeartbeatArgs) -> CliResult {
    let HeartbeatArgs::Run { json } = args;
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    let local = LocalRuntime::new(
        home.clone(),
        config.clone(),
        Arc::new(NoHuman),
        Arc::new(|_, _| {}),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let event = runtime.block_on(run_heartbeat(
        &*local,
        &home,
        &config,
        lurkbot_core::now_ms(),
    ));
    if *json {
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string(&event)?))?;
    } else {
        let status = serde_json::to_value(event.status)?;
        let mut line = format!("heartbeat: {}", status.as_str().unwrap_or_default());
        if let Some(reason) = &event.reason {
            line.push_str(&format!(" ({})", lurkbot_core::printable(reason)));
        }
        if let Some(preview) = &event.preview {
            line.push_str(&format!(": {}", lurkbot_core::printable(preview)));
        }
        crate::run::print_stdout(&format!("{line}\n"))?;
    }
    if event.status == HeartbeatStatus::Failed {
        return Err(CliError::failed(
            "heartbeat",
            event
                .reason
                .unwrap_or_else(|| "the heartbeat failed".into()),
        ));
    }
    Ok(())
}
