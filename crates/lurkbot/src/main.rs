//! The `lurkbot` command line: parse, run, turn the outcome into an exit status once.

mod cli;
mod error;
mod logging;
mod progress;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
