//! `lurkbot state migrate --to <postgres-url | home> [--json]`: moves the home's durable state
//! (turns, inbound records, outbox, usage records, cron jobs and runs; ARCHITECTURE.md §6.3)
//! from where `[state] url` /
//! `LURKBOT_STATE_URL` puts it now to a PostgreSQL database, or back into the home's
//! `state/state.sqlite`. The copy is one transaction into an empty store, counted on both
//! sides; the source is left as it was. Refused while a gateway runs on the state. The URL
//! given carries no password (it would stand in the shell's history and `ps`): the password
//! comes from `LURKBOT_STATE_PASSWORD` (the environment or the home's `.env`). Afterwards the
//! owner points the gateways at the new place (`[state] url`, or removes it for the home).

use std::path::Path;

use clap::Args;
use lurkbot_core::{Config, Home, layout};
use lurkbot_state::{Location, STATE_FILE, STATE_URL_VAR, StateError, StateUrl, Store};
use serde_json::json;

use crate::error::{CliError, CliResult};

/// Flags of `lurkbot state migrate`.
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// Where to: a PostgreSQL URL without its password (`postgres://lurkbot@db/lurkbot`), or
    /// `home` for the home's own store.
    #[arg(long, value_name = "POSTGRES_URL|home")]
    to: String,
    /// Print JSON: `{from, to, turns, inbound, outbox, usage, documents, logLines}`.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(home_path: &Path, args: &MigrateArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let usage = |m: String| CliError::usage("state migrate", m);
    let failed = |e: StateError| CliError::failed("state migrate", e.to_string());
    let config = Config::load(&home.join(layout::CONFIG))?;
    let from = lurkbot_agent::setup::state_location(&home, &config).map_err(failed)?;
    let to = target(&home, &args.to).map_err(|e| usage(e.to_string()))?;
    match (&from, &to) {
        (Location::Embedded, Location::Embedded) => {
            return Err(usage(format!(
                "the state is in the home already ({STATE_FILE}): give --to a postgres:// URL"
            )));
        }
        (Location::Postgres(a), Location::Postgres(b)) if a.to_string() == b.to_string() => {
            return Err(usage(format!("the state is in {a} already")));
        }
        _ => {}
    }
    if matches!(from, Location::Embedded) && !home.join(STATE_FILE).is_file() {
        return Err(usage(
            "nothing to migrate: no gateway has run in this home yet".into(),
        ));
    }
    let source = Store::open_at(&home, &from, None).map_err(failed)?;
    // A running gateway holds its lock all along; a lock seen once may be a command that just
    // ended (its connection still closing) or a statement's own short lock: look again.
    let mut running = source.others_running().map_err(failed)?;
    for _ in 0..10 {
        if running.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        running = source.others_running().map_err(failed)?;
    }
    if !running.is_empty() {
        return Err(CliError::failed(
            "state migrate",
            format!(
                "a gateway still runs on this state ({}): stop every gateway first",
                running.join(", ")
            ),
        ));
    }
    if let Some(lease) = source
        .leases()
        .map_err(failed)?
        .into_iter()
        .find(|l| l.alive)
    {
        return Err(CliError::failed(
            "state migrate",
            format!(
                "gateway {} still runs on this state (it holds {}): stop every gateway first",
                lease.owner, lease.name
            ),
        ));
    }
    let into_home = matches!(to, Location::Embedded);
    let present = lurkbot_agent::shared_state::files_present(&home);
    if into_home && !present.is_empty() {
        return Err(CliError::failed(
            "state migrate",
            format!(
                "the home already has {}: move them aside first, as the database's replace them",
                present.join(", ")
            ),
        ));
    }
    let from_files = if matches!(from, Location::Embedded) {
        lurkbot_agent::shared_state::home_files(&home)
    } else {
        lurkbot_state::HomeFiles::default()
    };
    let target = Store::open_at(&home, &to, None).map_err(failed)?;
    let moved = source.copy_into(&target, from_files).map_err(failed)?;
    if into_home {
        let zone = lurkbot_agent::usage::zone(&config);
        lurkbot_agent::shared_state::write_home_files(&home, &zone, &moved.for_files).map_err(
            |e| {
                CliError::failed(
                    "state migrate",
                    format!("the state moved but the home's files were not written: {e}"),
                )
            },
        )?;
    }
    let counts = moved.counts;
    let (from_text, to_text) = (source.describe(&home), target.describe(&home));
    if args.json {
        let out = json!({"from": from_text, "to": to_text, "turns": counts.turns,
            "inbound": counts.inbound, "outbox": counts.outbox, "usage": counts.usage,
            "documents": counts.documents, "logLines": counts.log_lines});
        crate::run::print_stdout(&format!("{out}\n"))?;
        return Ok(());
    }
    let next = match &to {
        Location::Embedded => format!(
            "remove [state] url from config.toml and {STATE_URL_VAR} from .env, then start the gateway"
        ),
        Location::Postgres(url) => format!(
            "set [state] url = \"{url}\" in config.toml (the password stays in .env), then start the gateways"
        ),
    };
    crate::run::print_stdout(&format!(
        "moved {} turns, {} inbound records, {} outbox messages, {} usage records, {} documents and {} log lines from {from_text} to {to_text} (counted on both sides; the source is left as it was)\nnext: {next}\n",
        counts.turns,
        counts.inbound,
        counts.outbox,
        counts.usage,
        counts.documents,
        counts.log_lines
    ))?;
    Ok(())
}

/// The store `--to` names: `home`, or a PostgreSQL URL with its password from
/// `LURKBOT_STATE_PASSWORD`.
fn target(home: &Home, to: &str) -> Result<Location, StateError> {
    if to == "home" {
        return Ok(Location::Embedded);
    }
    if StateUrl::parse(to)?.has_password() {
        return Err(StateError::Url(format!(
            "--to carries a password, which would stay in the shell's history: give the URL without it and put the password in the home's .env as {}",
            lurkbot_state::STATE_PASSWORD_VAR
        )));
    }
    let vars = lurkbot_agent::setup::variables(home);
    let without_url = |name: &str| (name != STATE_URL_VAR).then(|| vars(name)).flatten();
    Location::resolve(Some(to), &without_url)
}
