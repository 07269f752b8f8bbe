//! `lurkbot skills list [--json]`, `skills info NAME [--json]` and `skills approve NAME|--all`:
//! the skills the agent may be offered, where each comes from, why one is unavailable, invalid
//! or pending, and the owner's approval of a skill's text (ARCHITECTURE.md §7).

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_agent::skills::{Skill, discover};
use lurkbot_core::{Config, Home, layout, printable};
use serde_json::json;

/// The `skills` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SkillsArgs {
    /// Every skill: available, unavailable (with the unmet requirement) and invalid.
    List {
        /// `[{name, description, source, path, available, reason}]`.
        #[arg(long)]
        json: bool,
    },
    /// Approves a pending skill's current text: it is offered from now on, until it changes.
    Approve {
        /// The skill's name (`skills list` shows the pending ones).
        #[arg(required_unless_present = "all")]
        name: Option<String>,
        /// Every pending skill (after reading them).
        #[arg(long, conflicts_with = "name")]
        all: bool,
    },
    /// One skill: where it is, what it needs, whether it is offered.
    Info {
        /// The skill's name.
        name: String,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(home_path: &Path, args: &SkillsArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    let skills = discover(&home, &config);
    match args {
        SkillsArgs::Approve { name, all } => {
            let chosen: Vec<&Skill> = skills
                .iter()
                .filter(|s| s.pending && (*all || name.as_deref() == Some(s.name.as_str())))
                .collect();
            if chosen.is_empty() {
                let what = match name {
                    Some(n) if skills.iter().any(|s| s.name == *n) => {
                        format!("skill '{n}' is not pending")
                    }
                    Some(n) => format!("no skill '{n}'; `lurkbot skills list` shows them"),
                    None => "no skill is pending".to_string(),
                };
                return Err(CliError::failed("skills", what));
            }
            let mut out = String::new();
            for skill in chosen {
                lurkbot_agent::skills::approval::approve(&home, &skill.path, &skill.digest)?;
                out.push_str(&format!(
                    "approved {} ({})\n",
                    printable(&skill.name),
                    skill.path
                ));
            }
            print(out.trim_end())
        }
        SkillsArgs::List { json: true } => print(&serde_json::to_string_pretty(&skills)?),
        SkillsArgs::List { json: false } => {
            let available = skills.iter().filter(|s| s.available).count();
            let mut out = format!("{} skill(s), {available} available\n", skills.len());
            for s in &skills {
                let state = match (&s.reason, s.available) {
                    (_, true) => "available".to_string(),
                    (Some(reason), false) => reason.clone(),
                    (None, false) => "unavailable".to_string(),
                };
                out.push_str(&format!(
                    "{:<28} {:<9} {}\n",
                    printable(&s.name),
                    source(s),
                    printable(&state)
                ));
            }
            print(out.trim_end())
        }
        SkillsArgs::Info { name, json } => {
            let Some(skill) = skills.iter().find(|s| s.name == *name) else {
                return Err(CliError::failed(
                    "skills",
                    format!("no skill '{name}'; `lurkbot skills list` shows them"),
                ));
            };
            let r = &skill.requires;
            if *json {
                let mut value = serde_json::to_value(skill)?;
                value["requires"] = json!({"bins": r.bins, "anyBins": r.any_bins, "env": r.env,
                    "config": r.config, "os": r.os});
                return print(&serde_json::to_string_pretty(&value)?);
            }
            let mut out = format!(
                "{}\n  {}\n  source: {}\n  path: {}\n  {}\n",
                printable(&skill.name),
                printable(&skill.description),
                source(skill),
                skill.path,
                match &skill.reason {
                    None => "available: offered to the model".to_string(),
                    Some(reason) => format!("not offered: {}", printable(reason)),
                }
            );
            for (what, list) in [
                ("programs", &r.bins),
                ("one of the programs", &r.any_bins),
                ("variables", &r.env),
                ("settings", &r.config),
                ("systems", &r.os),
            ] {
                if !list.is_empty() {
                    out.push_str(&format!(
                        "  needs {what}: {}\n",
                        printable(&list.join(", "))
                    ));
                }
            }
            print(out.trim_end())
        }
    }
}

fn source(skill: &Skill) -> &'static str {
    match skill.source {
        lurkbot_agent::skills::SkillSource::Workspace => "workspace",
        lurkbot_agent::skills::SkillSource::Home => "home",
        lurkbot_agent::skills::SkillSource::Bundled => "bundled",
    }
}

fn print(text: &str) -> CliResult {
    crate::run::print_stdout(&format!("{text}\n"))?;
    Ok(())
}
