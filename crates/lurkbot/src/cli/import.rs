//! `lurkbot import openclaw [DIR] [--dry-run] [--overwrite] [--json]`: a user's OpenClaw state
//! (default `~/.openclaw`) moved into the home: workspace files, skills, model and fallbacks,
//! tool policy, heartbeat, agents, cron jobs; keys go to `.env`, never config.toml. What could
//! not be mapped is printed with the reason. Exit 1 when something failed to be written.

use crate::error::{CliError, CliResult};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use lurkbot_agent::import::{self, describe, openclaw};
use lurkbot_core::Home;

/// `lurkbot import`.
#[derive(Debug, Subcommand)]
pub(crate) enum ImportArgs {
    /// An OpenClaw state folder (default ~/.openclaw).
    Openclaw(OpenClawArgs),
}

/// `lurkbot import openclaw`.
#[derive(Debug, Args)]
pub(crate) struct OpenClawArgs {
    /// The state folder (holds openclaw.json).
    dir: Option<PathBuf>,
    /// Print the plan; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Replace files, settings, `.env` variables and same-named cron jobs that exist.
    #[arg(long)]
    overwrite: bool,
    /// `{source, actions: [{kind, …}], unmapped: [{what, why}], outcomes?: [{action, result,
    /// error?}]}` (secret values are never printed).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(home_path: &Path, args: &ImportArgs) -> CliResult {
    let ImportArgs::Openclaw(args) = args;
    let home = Home::open(home_path)?;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::home_dir()
            .map(|h| h.join(".openclaw"))
            .ok_or_else(|| CliError::usage("import", "no HOME: name the OpenClaw folder"))?,
    };
    let plan = openclaw::plan(&dir).map_err(|e| CliError::usage("import", e))?;
    let outcomes = if args.dry_run {
        None
    } else {
        Some(import::apply(
            &home,
            &plan,
            args.overwrite,
            lurkbot_core::now_ms(),
        ))
    };
    let failed = outcomes
        .iter()
        .flatten()
        .filter(|o| o.result == "failed")
        .count();
    if args.json {
        let mut value = serde_json::to_value(&plan)?;
        value["outcomes"] = serde_json::to_value(&outcomes)?;
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
    } else {
        let mut out = format!("import from {}\n", plan.source.display());
        match &outcomes {
            None => {
                out.push_str("plan (--dry-run: nothing written)\n");
                for action in &plan.actions {
                    out.push_str(&format!("  {}\n", describe(action)));
                }
            }
            Some(outcomes) => {
                for o in outcomes {
                    let error = o
                        .error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    out.push_str(&format!("  {:<8} {}{error}\n", o.result, o.action));
                }
                if outcomes.iter().any(|o| o.result == "kept") {
                    out.push_str("kept: it exists; --overwrite replaces it\n");
                }
            }
        }
        if !plan.unmapped.is_empty() {
            out.push_str("not imported:\n");
            for u in &plan.unmapped {
                out.push_str(&format!("  {}: {}\n", u.what, u.why));
            }
        }
        crate::run::print_stdout(&out)?;
    }
    if failed > 0 {
        return Err(CliError::failed(
            "import",
            format!("{failed} action(s) failed (see above)"),
        ));
    }
    Ok(())
}
