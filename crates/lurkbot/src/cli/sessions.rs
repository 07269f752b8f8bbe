//! `lurkbot sessions list|history|reset|delete`: the agent's sessions (ARCHITECTURE.md §5).

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_agent::{Entry, Sessions};
use lurkbot_core::{Home, SessionKey};
use lurkbot_llm::Role;

/// The `sessions` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionsArgs {
    /// Every session of an agent: key, id, turns, tokens, last activity.
    List {
        /// The agent.
        #[arg(long, default_value = "main")]
        agent: String,
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The messages of a session's current transcript.
    History {
        /// Session key.
        #[arg(default_value = "agent:main:main")]
        key: String,
        /// Print the raw JSONL entries.
        #[arg(long)]
        json: bool,
    },
    /// One session: model, turns, tokens so far, and how much of the context window its
    /// context fills.
    Show {
        /// Session key.
        #[arg(default_value = "agent:main:main")]
        key: String,
        /// `{key, sessionId, model, turns, inputTokens, outputTokens, contextTokens,
        /// contextWindow, contextShare}`.
        #[arg(long)]
        json: bool,
    },
    /// Start a fresh session for the key (the old transcript stays on disk).
    Reset {
        /// Session key.
        key: String,
    },
    /// Remove the key and its current transcript.
    Delete {
        /// Session key.
        key: String,
    },
}

/// The store and entry of an existing session; an unknown key is an error naming `sessions list`.
fn existing(home: &Home, key: &str) -> Result<(Sessions, lurkbot_agent::SessionEntry), CliError> {
    let key = SessionKey::parse(key)?;
    let sessions = Sessions::open(home, key.agent_id());
    let Some(entry) = sessions.list()?.remove(key.as_str()) else {
        return Err(CliError::failed(
            "sessions",
            format!("no session '{key}' ('lurkbot sessions list' shows them)"),
        ));
    };
    Ok((sessions, entry))
}

pub(crate) fn run(home_path: &Path, args: &SessionsArgs) -> CliResult {
    let home = Home::open(home_path)?;
    match args {
        SessionsArgs::List { agent, json } => {
            let all = Sessions::open(&home, agent).list()?;
            if *json {
                // A list of entries (each with its `key`), `[]` when there are none.
                let entries: Vec<_> = all.values().collect();
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string(&entries)?))?;
            } else {
                let mut out = format!("{} session(s)\n", all.len());
                for e in all.values() {
                    out.push_str(&format!(
                        "{}  {}  {} turn(s)  {} tokens in / {} out\n",
                        e.key, e.session_id, e.turns, e.usage.input_tokens, e.usage.output_tokens
                    ));
                }
                crate::run::print_stdout(&out)?;
            }
            Ok(())
        }
        SessionsArgs::History { key, json } => {
            let (sessions, entry) = existing(&home, key)?;
            let mut out = String::new();
            for e in sessions.history(&entry.session_id)? {
                if *json {
                    out.push_str(&serde_json::to_string(&e)?);
                    out.push('\n');
                    continue;
                }
                match e {
                    Entry::Message { message, .. } => {
                        let who = match message.role {
                            Role::User => "user",
                            Role::Assistant => "assistant",
                            Role::Tool => "tool",
                        };
                        if !message.content.is_empty() {
                            out.push_str(&format!("[{who}] {}\n", message.content));
                        }
                        for call in &message.tool_calls {
                            out.push_str(&format!("[{who}] → {} {}\n", call.name, call.arguments));
                        }
                    }
                    Entry::Compaction { summary, .. } => {
                        out.push_str(&format!("[summary] {summary}\n"))
                    }
                }
            }
            crate::run::print_stdout(&out)?;
            Ok(())
        }
        SessionsArgs::Show { key, json } => {
            let (sessions, entry) = existing(&home, key)?;
            let config = lurkbot_core::Config::load(&home.join(lurkbot_core::layout::CONFIG))?;
            let context = lurkbot_agent::context_tokens(&sessions.context(&entry.session_id)?);
            let window = config.agent.context_window;
            let share = context as f64 / window.max(1) as f64;
            let shown = serde_json::json!({
                "key": entry.key,
                "sessionId": entry.session_id,
                "model": entry.model,
                "turns": entry.turns,
                "inputTokens": entry.usage.input_tokens,
                "outputTokens": entry.usage.output_tokens,
                "contextTokens": context,
                "contextWindow": window,
                "contextShare": share,
            });
            if *json {
                crate::run::print_stdout(&format!("{shown}\n"))?;
            } else {
                crate::run::print_stdout(&format!(
                    "session: {}\nid: {}\nmodel: {}\nturns: {}\ntokens: {} in, {} out\ncontext: about {} of {} tokens ({:.1} %)\n",
                    entry.key,
                    entry.session_id,
                    entry.model.as_deref().unwrap_or("-"),
                    entry.turns,
                    entry.usage.input_tokens,
                    entry.usage.output_tokens,
                    context,
                    window,
                    share * 100.0
                ))?;
            }
            Ok(())
        }
        SessionsArgs::Reset { key } => {
            let key = SessionKey::parse(key)?;
            let id = Sessions::open(&home, key.agent_id()).reset(&key)?;
            crate::run::print_stdout(&format!("{key} now uses session {id}\n"))?;
            Ok(())
        }
        SessionsArgs::Delete { key } => {
            let key = SessionKey::parse(key)?;
            if Sessions::open(&home, key.agent_id()).delete(&key)? {
                crate::run::print_stdout(&format!("deleted {key}\n"))?;
                Ok(())
            } else {
                Err(CliError::failed("sessions", format!("no session '{key}'")))
            }
        }
    }
}
