//! `lurkbot mcp list [--json]` and `lurkbot mcp serve` (ARCHITECTURE.md §7): the MCP servers of
//! `[mcp.servers]` — each started (within its startup timeout), its state and tools shown, then
//! stopped — and LurkBot itself as an MCP server on stdio.

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_agent::mcp::McpHub;
use lurkbot_core::{Config, Home, layout, printable};

/// The `mcp` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum McpArgs {
    /// Start each configured server, show its state (ready, failed, disabled) and tools.
    List {
        /// `[{name, transport, state, tools: [{name, tool, description}], error}]`.
        #[arg(long)]
        json: bool,
    },
    /// Serve terminal_exec and read over MCP on stdin/stdout (for Claude Code, Codex, IDEs).
    Serve,
}

pub(crate) fn run(home_path: &Path, args: &McpArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match args {
        McpArgs::List { json } => {
            let hub = McpHub::new(&home, &config.mcp);
            let report = runtime.block_on(async {
                hub.start().await;
                let report = hub.report();
                hub.shutdown().await;
                report
            });
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
            } else if report.is_empty() {
                crate::run::print_stdout(
                    "no MCP servers: add [mcp.servers.<name>] with command = [\"program\", \"arg\"] or url = \"http://…\" to config.toml\n",
                )?;
            } else {
                let mut out = String::new();
                for server in &report {
                    out.push_str(&format!(
                        "{} ({}): {}{}\n",
                        server.name,
                        server.transport,
                        server.state,
                        server
                            .error
                            .as_deref()
                            .map(|e| format!(" — {}", printable(e)))
                            .unwrap_or_default()
                    ));
                    for tool in &server.tools {
                        out.push_str(&format!(
                            "  {}  {}\n",
                            tool.name,
                            printable(&tool.description)
                        ));
                    }
                }
                crate::run::print_stdout(&out)?;
            }
        }
        McpArgs::Serve => {
            runtime
                .block_on(lurkbot_agent::mcp::serve::serve_stdio(home, config))
                .map_err(|e| CliError::failed("mcp", e))?;
        }
    }
    Ok(())
}
