//! Dispatch of the parsed command line to the subcommands.

use crate::error::CliResult;
use lurkbot_core::Home;

use crate::cli::{Cli, Sub};

/// Runs one invocation.
pub(crate) fn run(cli: Cli) -> CliResult {
    let home_path = Home::locate(cli.home.as_deref())?;
    match cli.command {
        Sub::Init(args) => crate::cli::init::run(&home_path, &args),
        Sub::Setup(args) => crate::cli::setup::run(&home_path, &args),
        Sub::Exec(args) => crate::cli::exec::run(&home_path, args),
        Sub::Config(args) => crate::cli::config::run(&home_path, &args),
        Sub::Agent(args) => crate::cli::agent::run(&home_path, args),
        Sub::Chat(args) => crate::cli::chat::run(&home_path, args),
        Sub::Doctor(args) => crate::cli::doctor::run(&home_path, &args),
        Sub::Gateway(args) => crate::cli::gateway::run(&home_path, &args),
        Sub::Sessions(args) => crate::cli::sessions::run(&home_path, &args),
        Sub::Memory(args) => crate::cli::memory::run(&home_path, &args),
        Sub::Skills(args) => crate::cli::skills::run(&home_path, &args),
        Sub::Mcp(args) => crate::cli::mcp::run(&home_path, &args),
        Sub::Cron(args) => crate::cli::cron::run(&home_path, args),
        Sub::Heartbeat(args) => crate::cli::heartbeat::run(&home_path, &args),
        Sub::Usage(args) => crate::cli::usage::run(&home_path, &args),
        Sub::Search(args) => crate::cli::search::run(&home_path, &args),
        Sub::Import(args) => crate::cli::import::run(&home_path, &args),
        Sub::Browser(args) => crate::cli::browser::run(&home_path, &args),
        Sub::Channels(args) => crate::cli::channels::run(&home_path, &args),
        Sub::Pairing(args) => crate::cli::pairing::run(&home_path, &args),
        Sub::Plugins(args) => crate::cli::plugins::run(&home_path, &args),
        Sub::Outbox(args) => crate::cli::outbox::run(&home_path, &args),
        Sub::State(args) => crate::cli::state::run(&home_path, &args),
        Sub::Devices(args) => crate::cli::devices::run(&home_path, &args),
        Sub::Nodes(args) => crate::cli::nodes::run(&home_path, &args),
        Sub::Node(args) => crate::cli::node::run(&home_path, &args),
        Sub::Users(args) => crate::cli::users::run(&home_path, &args),
        Sub::Logs(args) => crate::cli::logs::run(&home_path, &args),
        Sub::Dashboard(args) => crate::cli::dashboard::run(&home_path, &args),
        Sub::Status(args) => crate::cli::status::run(&home_path, &args),
        Sub::Completions(args) => crate::cli::completions::completions(&args),
        Sub::Man(args) => crate::cli::completions::man(&args),
    }
}

/// Writes to stdout, treating a closed pipe (`lurkbot … | head`) as success.
pub(crate) fn print_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
