//! `lurkbot outbox [--json] [--all] | retry <id>`: the messages the gateway recorded to send on
//! its channels and has not sent — pending (sent again every minute and at start) or failed
//! for good (the platform refused: a blocked bot, an unknown chat), which stay until the owner
//! retries them. `--all` lists sent ones too (kept a week). `--json` prints
//! `[{id, turn, channel, chat, kind, state, piecesSent, platformId, attempts, error,
//! createdMs, updatedMs, text}]`. Exits 1 when a message failed, so a script or a monitor sees it.

use std::path::Path;

use clap::{Args, Subcommand};
use lurkbot_core::Home;
use lurkbot_state::{Outgoing, OutgoingState};
use serde_json::json;

use crate::error::{CliError, CliResult};

/// `lurkbot outbox`.
#[derive(Debug, Args)]
pub(crate) struct OutboxArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// List sent messages too.
    #[arg(long)]
    all: bool,
    #[command(subcommand)]
    action: Option<OutboxAction>,
}

/// What to do to one message.
#[derive(Debug, Subcommand)]
enum OutboxAction {
    /// Put a failed message back in line: the running gateway sends it within a minute (or
    /// at its next start).
    Retry {
        /// Its id (`out_…`, from `lurkbot outbox`).
        id: String,
    },
}

/// The longest list printed.
const MAX_LISTED: usize = 1000;

pub(crate) fn run(home_path: &Path, args: &OutboxArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let store = super::state::open_existing(&home)
        .map_err(|e| CliError::failed("outbox", e.to_string()))?;
    let Some(store) = store else {
        crate::run::print_stdout("the outbox is empty: no gateway has run in this home yet\n")?;
        return Ok(());
    };
    if let Some(OutboxAction::Retry { id }) = &args.action {
        store.retry_outgoing(id).map_err(|e| match e {
            lurkbot_state::StateError::NotFound { .. } => CliError::usage(
                "outbox",
                format!("{e}: only a failed message can be retried (see lurkbot outbox)"),
            ),
            other => CliError::failed("outbox", other.to_string()),
        })?;
        crate::run::print_stdout(&format!(
            "{id} is pending again: the running gateway sends it within a minute\n"
        ))?;
        return Ok(());
    }
    let states: &[OutgoingState] = if args.all {
        &[]
    } else {
        &[OutgoingState::Pending, OutgoingState::Failed]
    };
    let listed = store
        .outbox(states, MAX_LISTED)
        .map_err(|e| CliError::failed("outbox", e.to_string()))?;
    let failed = listed
        .iter()
        .filter(|m| m.state == OutgoingState::Failed)
        .count();
    if args.json {
        let rows: Vec<serde_json::Value> = listed.iter().map(row).collect();
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
    } else {
        crate::run::print_stdout(&text(&listed, failed))?;
    }
    if failed > 0 {
        return Err(CliError::Status(1));
    }
    Ok(())
}

fn row(m: &Outgoing) -> serde_json::Value {
    json!({"id": m.id, "turn": m.turn, "channel": m.channel, "chat": m.chat, "kind": m.kind,
        "state": m.state.as_str(), "piecesSent": m.pieces_sent, "platformId": m.platform_id,
        "attempts": m.attempts, "error": m.error, "createdMs": m.created_ms,
        "updatedMs": m.updated_ms, "text": m.body})
}

fn text(listed: &[Outgoing], failed: usize) -> String {
    if listed.is_empty() {
        return "the outbox is empty: every message was sent\n".into();
    }
    let pending = listed
        .iter()
        .filter(|m| m.state == OutgoingState::Pending)
        .count();
    let mut out = format!("{pending} pending, {failed} failed\n");
    for m in listed {
        let preview: String = m.body.chars().take(40).collect();
        let why = m.error.as_deref().unwrap_or("");
        out.push_str(&format!(
            "{}  {:<7} {:<8} {} {}  \"{preview}\"  {why}\n",
            m.id,
            m.state.as_str(),
            m.channel,
            m.chat,
            m.kind,
        ));
    }
    if failed > 0 {
        out.push_str("retry a failed one with: lurkbot outbox retry <id>\n");
    }
    out
}
