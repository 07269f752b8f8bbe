//! Dispatch of the parsed command line to the subcommands.

use crate::error::CliResult;
use lurkbot_core::Home;

use crate::cli::{Cli, Sub};

/// Runs one invocation.
pub(crate) fn run(cli: Cli) -> CliResult {
    let home_path = Home::locate(cli.globals.home.as_deref())?;
    match cli.command {
        Sub::Init(args) => apart(|| crate::cli::init::run(&home_path, &args)),
        Sub::Setup(args) => apart(|| crate::cli::setup::run(&home_path, &args)),
        Sub::Exec(args) => apart(|| crate::cli::exec::run(&home_path, args)),
        Sub::Config(args) => apart(|| crate::cli::config::run(&home_path, &args)),
        Sub::Agent(args) => apart(|| crate::cli::agent::run(&home_path, args)),
        Sub::Chat(args) => apart(|| crate::cli::chat::run(&home_path, args)),
        Sub::Doctor(args) => apart(|| crate::cli::doctor::run(&home_path, &args)),
        Sub::Gateway(args) => apart(|| crate::cli::gateway::run(&home_path, &args)),
        Sub::Sessions(args) => apart(|| crate::cli::sessions::run(&home_path, &args)),
        Sub::Memory(args) => apart(|| crate::cli::memory::run(&home_path, &args)),
        Sub::Skills(args) => apart(|| crate::cli::skills::run(&home_path, &args)),
        Sub::Mcp(args) => apart(|| crate::cli::mcp::run(&home_path, &args)),
        Sub::Cron(args) => apart(|| crate::cli::cron::run(&home_path, args)),
        Sub::Heartbeat(args) => apart(|| crate::cli::heartbeat::run(&home_path, &args)),
        Sub::Usage(args) => apart(|| crate::cli::usage::run(&home_path, &args)),
        Sub::Search(args) => apart(|| crate::cli::search::run(&home_path, &args)),
        Sub::Import(args) => apart(|| crate::cli::import::run(&home_path, &args)),
        Sub::Browser(args) => apart(|| crate::cli::browser::run(&home_path, &args)),
        Sub::Channels(args) => apart(|| crate::cli::channels::run(&home_path, &args)),
        Sub::Pairing(args) => apart(|| crate::cli::pairing::run(&home_path, &args)),
        Sub::Plugins(args) => apart(|| crate::cli::plugins::run(&home_path, &args)),
        Sub::Outbox(args) => apart(|| crate::cli::outbox::run(&home_path, &args)),
        Sub::State(args) => apart(|| crate::cli::state::run(&home_path, &args)),
        Sub::Devices(args) => apart(|| crate::cli::devices::run(&home_path, &args)),
        Sub::Nodes(args) => apart(|| crate::cli::nodes::run(&home_path, &args)),
        Sub::Node(args) => apart(|| crate::cli::node::run(&home_path, &args)),
        Sub::Users(args) => apart(|| crate::cli::users::run(&home_path, &args)),
        Sub::Logs(args) => apart(|| crate::cli::logs::run(&home_path, &args)),
        Sub::Dashboard(args) => apart(|| crate::cli::dashboard::run(&home_path, &args)),
        Sub::Status(args) => apart(|| crate::cli::status::run(&home_path, &args)),
        Sub::Completions(args) => apart(|| crate::cli::completions::completions(&args)),
        Sub::Man(args) => apart(|| crate::cli::completions::man(&args)),
    }
}

/// Runs one subcommand in a function of its own. Inlined into [`run`], every subcommand's code
/// made one 150 KB function, mapped whole by every start — the gateway's, which stays resident,
/// included (ARCHITECTURE.md §9, idle RSS).
#[inline(never)]
fn apart<T>(subcommand: impl FnOnce() -> T) -> T {
    subcommand()
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
