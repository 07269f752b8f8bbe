//! `lurkbot config get|set|unset|list|schema|path`.

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_core::{ConfigDoc, Home, layout};

/// Subcommands of `lurkbot config`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigArgs {
    /// Print the value at a dotted key (exit 1 when unset). Secrets are masked.
    Get {
        /// Dotted key, e.g. permissions.calendar.
        key: String,
    },
    /// Set a dotted key. Numbers, booleans and arrays are typed; other text becomes a string.
    /// The file must stay valid, keeps its comments, and is written atomically (0600).
    Set {
        /// Dotted key, e.g. permissions.calendar.
        key: String,
        /// New value, e.g. read-write, 18789, true, '["a","b"]'.
        value: String,
    },
    /// Remove a dotted key so its default applies again (exit 1 when it was not set). The file
    /// keeps its comments and must stay valid.
    Unset {
        /// Dotted key, e.g. agent.max_output_tokens.
        key: String,
    },
    /// Every setting's effective value and its source (default, file or env); secrets masked.
    List {
        /// A JSON list of {key, value, source}.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of config.toml: every key, its type, default and meaning.
    Schema {
        /// Print the Markdown reference (docs/CONFIG.md) instead.
        #[arg(long)]
        markdown: bool,
    },
    /// Print the path of config.toml.
    Path,
}

pub(crate) fn run(home_path: &Path, args: &ConfigArgs) -> CliResult {
    let path = home_path.join(layout::CONFIG);
    match args {
        ConfigArgs::Path => {
            crate::run::print_stdout(&format!("{}\n", path.display()))?;
            Ok(())
        }
        ConfigArgs::Get { key } => match ConfigDoc::load(&path)?.get(key)? {
            Some(value) => {
                crate::run::print_stdout(&format!("{value}\n"))?;
                Ok(())
            }
            None => Err(CliError::failed(
                "",
                format!("'{key}' is not set in {}", path.display()),
            )),
        },
        ConfigArgs::List { json } => super::config_list::run(home_path, *json),
        ConfigArgs::Schema { markdown } => {
            let text = if *markdown {
                lurkbot_core::config_reference()
            } else {
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&lurkbot_core::config_schema())?
                )
            };
            crate::run::print_stdout(&text)?;
            Ok(())
        }
        ConfigArgs::Unset { key } => {
            let mut doc = ConfigDoc::load(&path)?;
            if !doc.unset(key)? {
                return Err(CliError::failed(
                    "",
                    format!("'{key}' is not set in {}", path.display()),
                ));
            }
            doc.save()?;
            crate::run::print_stdout(&format!("unset {key} (its default applies)\n"))?;
            if let Ok(home) = Home::open(home_path) {
                super::reload::tell_running_gateway(&home);
            }
            Ok(())
        }
        ConfigArgs::Set { key, value } => {
            // Creates a missing home with mode 0700, like every other entry point.
            let home = Home::open(home_path)?;
            let mut doc = ConfigDoc::load(&path)?;
            doc.set(key, value)?;
            doc.save()?;
            super::reload::tell_running_gateway(&home);
            Ok(())
        }
    }
}
