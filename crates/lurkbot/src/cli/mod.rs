//! Command-line definitions: one args struct per subcommand, each in its own file with its
//! `run` function.

pub(crate) mod agent;
pub(crate) mod agent_remote;
pub(crate) mod browser;
pub(crate) mod channels;
mod channels_login;
mod channels_login_signal;
pub(crate) mod chat;
pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod config_list;
pub(crate) mod console;
pub(crate) mod cron;
pub(crate) mod dashboard;
pub(crate) mod devices;
pub(crate) mod doctor;
mod doctor_check;
mod doctor_plugins;
mod doctor_signal;
pub(crate) mod exec;
pub(crate) mod gateway;
mod gateway_line;
pub(crate) mod heartbeat;
pub(crate) mod import;
pub(crate) mod init;
pub(crate) mod line_reader;
pub(crate) mod local_models;
pub(crate) mod logs;
pub(crate) mod markdown;
pub(crate) mod mcp;
pub(crate) mod memory;
pub(crate) mod node;
pub(crate) mod nodes;
pub(crate) mod outbox;
pub(crate) mod pairing;
pub(crate) mod plugins;
pub(crate) mod probe;
pub(crate) mod reload;
pub(crate) mod remote;
pub(crate) mod search;
pub(crate) mod service;
pub(crate) mod sessions;
pub(crate) mod setup;
pub(crate) mod skills;
pub(crate) mod state;
mod state_migrate;
pub(crate) mod status;
pub(crate) mod usage;
pub(crate) mod users;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub(crate) use gateway_line::parse;

/// LurkBot: a self-hosted personal AI agent in one small binary.
///
/// Every path is relative to the LurkBot home (--home, LURKBOT_HOME, default ~/.lurkbot).
/// Start with `lurkbot setup` (a model: a local server needs no key), then `lurkbot chat`, or
/// `lurkbot gateway` and `lurkbot dashboard --open` for the web UI. `lurkbot exec help` lists
/// the built-in terminal commands.
#[derive(Debug, Parser)]
#[command(name = "lurkbot", version, about, long_about, max_term_width = 100)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) globals: Globals,

    #[command(subcommand)]
    pub(crate) command: Sub,
}

/// The options every subcommand takes (also the gateway's short parse, `gateway_line.rs`).
#[derive(Debug, clap::Args)]
pub(crate) struct Globals {
    /// The LurkBot home directory (agents root).
    #[arg(long, global = true, env = "LURKBOT_HOME", value_name = "DIR")]
    pub(crate) home: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Sub {
    /// Create the home: config.toml (0600), workspace bootstrap files, bundled skills.
    /// Never overwrites a file that exists.
    Init(init::InitArgs),
    /// Choose the model: provider, model and key (asked on a terminal, or flags), checked with
    /// one call.
    Setup(setup::SetupArgs),
    /// Run one terminal_exec command (exactly what the agent would pass) and print its result.
    Exec(exec::ExecArgs),
    /// Read or change config.toml by dotted key, keeping its comments.
    #[command(subcommand)]
    Config(config::ConfigArgs),
    /// One agent turn: the reply streams to stdout, tool calls to stderr.
    Agent(agent::AgentArgs),
    /// Interactive chat on one session: /new, /think, /status, /quit.
    Chat(chat::ChatArgs),
    /// Check the home, permissions, config, model and gateway settings.
    Doctor(doctor::DoctorArgs),
    /// Gateway: WebSocket protocol, OpenAI-compatible API, hooks and web UI on one port.
    Gateway(gateway::GatewayArgs),
    /// List, read, reset or delete the agent's sessions.
    #[command(subcommand)]
    Sessions(sessions::SessionsArgs),
    /// Long-term memory: index, search.
    #[command(subcommand)]
    Memory(memory::MemoryArgs),
    /// The skills the agent may use: list, info, approve.
    #[command(subcommand)]
    Skills(skills::SkillsArgs),
    /// MCP: the configured servers and their tools (list), or LurkBot as a server (serve).
    #[command(subcommand)]
    Mcp(mcp::McpArgs),
    /// Scheduled jobs: add, list, rm, enable, disable, run, runs.
    #[command(subcommand)]
    Cron(cron::CronArgs),
    /// Run one heartbeat now (workspace/HEARTBEAT.md).
    #[command(subcommand)]
    Heartbeat(heartbeat::HeartbeatArgs),
    /// Search the web through the configured providers (as the web_search tool does).
    Search(search::SearchArgs),
    /// What model calls used: tokens and cost by day, agent, model or session.
    Usage(usage::UsageArgs),
    /// The managed Chromium of the browser tool: status, start, stop.
    #[command(subcommand)]
    Browser(browser::BrowserArgs),
    /// Messaging channels: the configured ones (list) and what they do (status).
    #[command(subcommand)]
    Channels(channels::ChannelsArgs),
    /// Strangers who asked to talk to the agent on a channel: list, approve, deny.
    #[command(subcommand)]
    Pairing(pairing::PairingArgs),
    /// Plugins under plugins/: installed (list), running (status), enable, disable.
    #[command(subcommand)]
    Plugins(plugins::PluginsArgs),
    /// Messages recorded to send on a channel and not sent: pending or failed (exit 1 when one
    /// failed); retry a failed one.
    Outbox(outbox::OutboxArgs),
    /// The home's durable state: the store, turns, outbox and which gateway holds what.
    #[command(subcommand)]
    State(state::StateArgs),
    /// Devices that asked to join the gateway as nodes: list, approve, reject.
    #[command(subcommand)]
    Devices(devices::DevicesArgs),
    /// The gateway's paired nodes: list, invoke a command on one.
    #[command(subcommand)]
    Nodes(nodes::NodesArgs),
    /// The people who share this gateway: add, list, remove, passwd, token.
    #[command(subcommand)]
    Users(users::UsersArgs),
    /// Serve another gateway as a node: node run --gateway URL.
    #[command(subcommand)]
    Node(node::NodeArgs),
    /// Move another platform's state into this home (openclaw).
    #[command(subcommand)]
    Import(import::ImportArgs),
    /// The gateway's log: the last lines, -f to follow, --since, --json.
    Logs(logs::LogsArgs),
    /// The web UI's address with the gateway token (shown on a terminal; --open opens it).
    Dashboard(dashboard::DashboardArgs),
    /// The running gateway's headline figures: turns, model and tool calls, tokens and cost,
    /// channel messages, outbox, connections, memory.
    Status(status::StatusArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff), or write every page (one per subcommand) with --dir.
    Man(completions::ManArgs),
}
