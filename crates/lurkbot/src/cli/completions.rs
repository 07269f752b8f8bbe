//! `lurkbot completions SHELL` and `lurkbot man`: shell completions and a man page, generated
//! from the same clap definitions as `--help`, so they never drift from the CLI.

use clap::CommandFactory;

use crate::error::CliResult;

/// Arguments of `lurkbot completions`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

/// Prints the completion script for `args.shell`, e.g.
/// `lurkbot completions bash > ~/.local/share/bash-completion/completions/lurkbot`.
pub(crate) fn completions(args: &CompletionsArgs) -> CliResult {
    let mut command = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "lurkbot", &mut out);
    crate::run::print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(())
}

/// The command the pages describe: `help` is `--help` there, not a page of its own.
fn pages() -> clap::Command {
    super::Cli::command().disable_help_subcommand(true)
}

/// Arguments of `lurkbot man`.
#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// Write `lurkbot.1` and a page for every subcommand (`lurkbot-cron.1`, `lurkbot-cron-add.1`,
    /// …: the pages the main one names) into this folder instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
}

/// Prints the man page (roff), e.g. `lurkbot man > ~/.local/share/man/man1/lurkbot.1`, or
/// writes every page into `--dir` (`lurkbot man --dir ~/.local/share/man/man1`).
pub(crate) fn man(args: &ManArgs) -> CliResult {
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir)?;
        clap_mangen::generate_to(pages(), dir)?;
        crate::run::print_stdout(&format!("wrote the man pages into {}\n", dir.display()))?;
        return Ok(());
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(pages()).render(&mut out)?;
    crate::run::print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(())
}
