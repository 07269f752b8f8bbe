//! The `lurkbot` command line: parse, run, turn the outcome into an exit status once.

mod cli;
mod error;
mod logging;
mod lossy_stderr;
mod progress;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Everything LurkBot creates in the home is private (ARCHITECTURE.md §2).
    lurkbot_core::make_created_files_private();
    let cli = cli::Cli::parse();
    match run::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The one place a failure is printed and turned into the exit status.
        Err(e) => {
            e.report();
            ExitCode::from(e.code())
        }
    }
}
