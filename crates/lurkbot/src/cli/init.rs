//! `lurkbot init`.

use crate::error::CliResult;
use std::path::Path;

use clap::Args;
use lurkbot_core::{Home, init_home};

/// Flags of `lurkbot init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// Print only errors.
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) fn run(home_path: &Path, args: &InitArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let skills = lurkbot_term::bundled_skills(&lurkbot_term::default_registry());
    let report = init_home(&home, &skills)?;
    if !args.quiet {
        let mut text = format!("LurkBot home: {}\n", home.root().display());
        for c in &report.created {
            text.push_str(&format!("  created  {c}\n"));
        }
        for k in &report.kept {
            text.push_str(&format!("  kept     {k} (exists)\n"));
        }
        text.push_str("Next: `lurkbot setup` chooses the model (provider, model, key; a server on this machine needs no key), then `lurkbot chat`.\n");
        crate::run::print_stdout(&text)?;
    }
    Ok(())
}
