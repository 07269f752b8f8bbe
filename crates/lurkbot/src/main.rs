//! The `lurkbot` command line: parse, run, turn the outcome into an exit status once.

mod cli;
mod error;
mod logging;
mod lossy_stderr;
mod progress;
mod run;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Everything LurkBot creates in the home is private (ARCHITECTURE.md §2).
    lurkbot_core::make_created_files_private();
    let cli = cli::parse();
    let status = match run::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The one place a failure is printed and turned into the exit status.
        Err(e) => {
            e.report();
            ExitCode::from(e.code())
        }
    };
    // The last log lines reach stderr before the process ends.
    lossy_stderr::drain(std::time::Duration::from_secs(2));
    status
}
