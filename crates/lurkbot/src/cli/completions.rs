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

/// Prints the man page (roff), e.g. `lurkbot man > ~/.local/share/man/man1/lurkbot.1`.
pub(crate) fn man() -> CliResult {
    let mut out = Vec::new();
    clap_mangen::Man::new(super::Cli::command()).render(&mut out)?;
    crate::run::print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(())
}
