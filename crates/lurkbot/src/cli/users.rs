//! `lurkbot users add NAME [--admin] | list [--json] | remove NAME [--purge] [--yes] | passwd
//! NAME | token NAME`: the people who share this home's gateway (ARCHITECTURE.md §6.2, on
//! with `[users] enabled = true`). While the gateway runs, every change goes through it (so a
//! renewed token or a removed user is signed out at once, open connections included);
//! otherwise the store, `users/users.json`, is changed directly.
//!
//! `add` and `token` print the user's new token alone on one line (shown once; the store keeps
//! only its SHA-256). `passwd` reads the password from the terminal without echo, or one line
//! of stdin when piped. `list --json` prints `[{name, admin, createdAtMs, password, usage}]` (usage: today's and
//! this month's tokens and dollars, totals only).

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use clap::Subcommand;
use lurkbot_core::Home;
use lurkbot_gateway::users::UserStore;
use serde_json::{Value, json};

use crate::error::{CliError, CliResult};

/// `lurkbot users`.
#[derive(Debug, Subcommand)]
pub(crate) enum UsersArgs {
    /// Add a user (with a home under users/NAME/); prints their token.
    Add {
        /// 1–32 of a-z 0-9 - _.
        name: String,
        /// They manage the gateway: its own home, settings, users and budgets.
        #[arg(long)]
        admin: bool,
    },
    /// Every user.
    List {
        /// `[{name, admin, createdAtMs, password, usage}]`.
        #[arg(long)]
        json: bool,
    },
    /// Remove a user (asks first); their home stays unless --purge.
    Remove {
        /// The user.
        name: String,
        /// Delete their home (sessions, memory, files) too.
        #[arg(long)]
        purge: bool,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
    },
    /// Set a user's password for the web UI (from the terminal, or stdin when piped).
    Passwd {
        /// The user.
        name: String,
    },
    /// Give a user a new token and revoke the old one; prints the new one.
    Token {
        /// The user.
        name: String,
    },
}

/// Where changes go: the running gateway, or the store.
enum Via {
    Gateway,
    Store(Home, UserStore),
}

fn failed(error: impl std::fmt::Display) -> CliError {
    CliError::failed("users", error.to_string())
}

impl Via {
    fn of(home: Home) -> Self {
        if lurkbot_core::RunningGateway::find(&home).is_some() {
            Self::Gateway
        } else {
            let store = UserStore::of(&home);
            Self::Store(home, store)
        }
    }

    fn call(&self, home: &Home, method: &str, params: Value) -> Result<Value, CliError> {
        super::remote::call_home_gateway(home, "users", method, params)
    }
}

pub(crate) fn run(home_path: &Path, args: &UsersArgs) -> CliResult {
    let home = Home::open(home_path)?;
    // A config.toml that does not parse is refused, naming the problem: acting on the defaults
    // would put users (or the state) where the owner's settings do not say.
    let config = lurkbot_core::Config::load(&home.config_path())?;
    if !config.users.enabled {
        eprintln!(
            "note: users are off for the gateway; set [users] enabled = true in config.toml (lurkbot config set users.enabled true) and restart it"
        );
    }
    // With the state in PostgreSQL the users are there (ARCHITECTURE.md §6.3).
    lurkbot_agent::setup::attach_state(&home, &config).map_err(failed)?;
    let via = Via::of(home.clone());
    match args {
        UsersArgs::Add { name, admin } => {
            let token = match &via {
                Via::Gateway => {
                    via.call(&home, "users.add", json!({"name": name, "admin": admin}))?["token"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                }
                Via::Store(home, store) => store.add(home, name, *admin).map_err(failed)?,
            };
            eprintln!(
                "added {name}{}; their token (shown once):",
                if *admin { " (admin)" } else { "" }
            );
            crate::run::print_stdout(&format!("{token}\n"))?;
        }
        UsersArgs::List { json } => {
            let rows: Vec<Value> = match &via {
                Via::Gateway => via.call(&home, "users.list", json!({}))?["users"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                Via::Store(home, store) => {
                    lurkbot_gateway::users::rows(home, &store.load().map_err(failed)?, &config)
                }
            };
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
                return Ok(());
            }
            let mut out = format!("{} user(s)\n", rows.len());
            for row in &rows {
                let used = row["usage"]["monthTokens"]
                    .as_u64()
                    .map(|t| format!(", {t} tokens this month"))
                    .unwrap_or_default();
                let password = if row["password"] == true {
                    "password set"
                } else {
                    "no password (token only)"
                };
                out.push_str(&format!(
                    "{:<32} {:<5} {password}{used}\n",
                    row["name"].as_str().unwrap_or(""),
                    if row["admin"] == true { "admin" } else { "" },
                ));
            }
            crate::run::print_stdout(&out)?;
        }
        UsersArgs::Remove { name, purge, yes } => {
            if !yes {
                confirm(name, *purge)?;
            }
            match &via {
                Via::Gateway => {
                    via.call(&home, "users.remove", json!({"name": name, "purge": purge}))?;
                }
                Via::Store(home, store) => {
                    store.remove(home, name, *purge).map_err(failed)?;
                }
            }
            let kept = if *purge {
                "and their home"
            } else {
                "(their home users/NAME/ is kept; --purge deletes it)"
            };
            crate::run::print_stdout(&format!("removed {name} {}\n", kept.replace("NAME", name)))?;
        }
        UsersArgs::Passwd { name } => {
            let password = read_password()?;
            match &via {
                Via::Gateway => {
                    via.call(
                        &home,
                        "users.passwd",
                        json!({"name": name, "password": password}),
                    )?;
                }
                Via::Store(_, store) => store.set_password(name, &password).map_err(failed)?,
            }
            crate::run::print_stdout(&format!("password set for {name}\n"))?;
        }
        UsersArgs::Token { name } => {
            let token = match &via {
                Via::Gateway => via.call(&home, "users.token", json!({"name": name}))?["token"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                Via::Store(_, store) => store.new_token(name).map_err(failed)?,
            };
            eprintln!("{name}'s old token no longer works; the new one (shown once):");
            crate::run::print_stdout(&format!("{token}\n"))?;
        }
    }
    Ok(())
}

/// Asks before a removal (a terminal only: a script says --yes).
fn confirm(name: &str, purge: bool) -> CliResult {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "users",
            "removing a user asks first; pass --yes when not at a terminal",
        ));
    }
    let what = if purge { " and delete their home" } else { "" };
    eprint!("remove {name}{what}? [y/N] ");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if matches!(line.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(CliError::failed("users", "not removed"))
    }
}

/// The new password: typed twice at a terminal (no echo), or one line of stdin.
fn read_password() -> Result<String, CliError> {
    if !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\n', '\r']).to_string());
    }
    let first = super::setup::read_hidden("new password")?;
    let again = super::setup::read_hidden("again")?;
    if first != again {
        return Err(CliError::failed(
            "users",
            "the two passwords differ; nothing changed",
        ));
    }
    Ok(first)
}
