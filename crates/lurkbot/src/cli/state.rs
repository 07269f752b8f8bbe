//! `lurkbot state status [--json]`: what the home's durable state holds (ARCHITECTURE.md §6.3) —
//! the store and its schema, the turns by state, the outbox, and the leases: which gateway
//! runs which unended turn and receives which channel, and whether that gateway still runs.
//! The store is where `[state] url` / `LURKBOT_STATE_URL` puts it (PostgreSQL), else the home's.
//! `--json` prints `{backend, file, schema, turns: {queued, running, done, failed}, outbox:
//! {pending, failed}, leases: [{name, owner, alive, expiresMs}]}`. Opening the store creates
//! nothing: a home where no gateway ever ran says so.

use std::path::Path;

use clap::{Args, Subcommand};
use lurkbot_core::{Config, Home, layout};
use lurkbot_state::{Location, STATE_FILE, Store};
use serde_json::json;

use crate::error::{CliError, CliResult};

/// `lurkbot state`.
#[derive(Debug, Subcommand)]
pub(crate) enum StateArgs {
    /// The store, its schema, turns, outbox and leases.
    Status(StatusArgs),
    /// Move the state to PostgreSQL or back into the home, counted on both sides.
    Migrate(super::state_migrate::MigrateArgs),
}

/// Flags of `lurkbot state status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The home's state store where `[state] url` / `LURKBOT_STATE_URL` or the home puts it, as
/// a command (not a gateway) opens it; `None` for an embedded store no gateway made yet
/// (looking creates nothing).
pub(crate) fn open_existing(home: &Home) -> Result<Option<Store>, lurkbot_state::StateError> {
    let config = Config::load(&home.join(layout::CONFIG)).unwrap_or_default();
    let location = lurkbot_agent::setup::state_location(home, &config)?;
    if matches!(location, Location::Embedded) && !home.join(STATE_FILE).is_file() {
        return Ok(None);
    }
    Store::open_at(home, &location, None).map(Some)
}

pub(crate) fn run(home_path: &Path, args: &StateArgs) -> CliResult {
    let args = match args {
        StateArgs::Status(args) => args,
        StateArgs::Migrate(args) => return super::state_migrate::run(home_path, args),
    };
    let home = Home::open(home_path)?;
    let failed = |e: lurkbot_state::StateError| CliError::failed("state", e.to_string());
    let Some(store) = open_existing(&home).map_err(failed)? else {
        let file = home.join(STATE_FILE);
        let text = if args.json {
            json!({"backend": "embedded", "file": file, "schema": null}).to_string() + "\n"
        } else {
            format!(
                "no state yet: {} is made by the gateway's first start\n",
                file.display()
            )
        };
        crate::run::print_stdout(&text)?;
        return Ok(());
    };
    let place = store.describe(&home);
    let schema = store.schema_version().map_err(failed)?;
    let [queued, running, done, ended_badly] = store.turn_counts().map_err(failed)?;
    let (pending, undelivered) = store.outbox_counts().map_err(failed)?;
    let leases = store.leases().map_err(failed)?;
    if args.json {
        let leases: Vec<serde_json::Value> = leases
            .iter()
            .map(|l| json!({"name": l.name, "owner": l.owner, "alive": l.alive, "expiresMs": l.expires_ms}))
            .collect();
        let out = json!({"backend": store.backend(), "file": place, "schema": schema,
            "turns": {"queued": queued, "running": running, "done": done, "failed": ended_badly},
            "outbox": {"pending": pending, "failed": undelivered}, "leases": leases});
        crate::run::print_stdout(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
        return Ok(());
    }
    let mut out = format!(
        "store: {}, {place} (schema {schema})\nturns: {queued} queued, {running} running, {done} done, {ended_badly} failed\noutbox: {pending} pending, {undelivered} failed\n",
        store.backend()
    );
    if leases.is_empty() {
        out.push_str("leases: none (no gateway runs a turn or receives a channel)\n");
    } else {
        out.push_str("leases:\n");
        for l in &leases {
            let holder = if l.alive {
                "running"
            } else {
                "gone: free for another gateway"
            };
            out.push_str(&format!("  {:<40} {} ({holder})\n", l.name, l.owner));
        }
    }
    crate::run::print_stdout(&out)?;
    Ok(())
}
