//! The `lurkbot` command line: parse, run, turn the outcome into an exit status once.

mod cli;
mod progress;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match run::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lurkbot: {e:#}");
            ExitCode::from(1)
        }
    }
}
