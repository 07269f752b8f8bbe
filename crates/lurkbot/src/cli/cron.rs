//! `lurkbot cron add|list|rm|enable|disable|run|runs`: the cron jobs of `cron/jobs.json` with
//! OpenClaw's flags (ARCHITECTURE.md §7). `run` runs a job in this process; a running gateway
//! picks up changes within its next scheduler tick (at most 10 s).

use crate::error::{CliError, CliResult};
use std::path::Path;
use std::sync::Arc;

use clap::{ArgGroup, Args, Subcommand};
use lurkbot_agent::cron::{
    CronJob, CronStore, Delivery, Payload, RunMode, RunStatus, Schedule, SessionTarget, WakeMode,
    parse_at, parse_period, rfc3339, run_job,
};
use lurkbot_agent::{LocalRuntime, NoHuman};
use lurkbot_core::{Config, Home, layout};

/// The `cron` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum CronArgs {
    /// Add a job.
    Add(Box<AddArgs>),
    /// Every job with its schedule, next run and last status.
    List {
        /// The jobs as JSON (jobs.json's shape).
        #[arg(long)]
        json: bool,
    },
    /// Remove a job (its run log stays).
    Rm {
        /// Job id.
        id: String,
    },
    /// Enable a job (its error count is reset).
    Enable {
        /// Job id.
        id: String,
    },
    /// Disable a job.
    Disable {
        /// Job id.
        id: String,
    },
    /// Run a job now in this process (only when due unless --force).
    Run {
        /// Job id.
        id: String,
        /// Run it even when it is not due or is disabled.
        #[arg(long)]
        force: bool,
    },
    /// A job's run log.
    Runs {
        /// Job id.
        id: String,
        /// One JSON array.
        #[arg(long)]
        json: bool,
    },
}

/// Flags of `cron add`.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("when").required(true).args(["at", "every", "cron"])),
    group(ArgGroup::new("what").required(true).args(["system_event", "message"])),
    after_help = "Examples:\n  lurkbot cron add --name report --cron \"0 9 * * 1-5\" --tz Europe/Berlin --message \"Write the daily report\" --announce --channel webchat\n  lurkbot cron add --name tea --at +20m --system-event \"Reminder: tea is ready\" --delete-after-run"
)]
pub(crate) struct AddArgs {
    /// A name for people.
    #[arg(long)]
    name: String,
    /// Once: RFC 3339 or a delay (+20m).
    #[arg(long, value_name = "WHEN")]
    at: Option<String>,
    /// Every period: 30s, 10m, 1h, 1d.
    #[arg(long, value_name = "PERIOD")]
    every: Option<String>,
    /// A 5- or 6-field cron expression.
    #[arg(long, value_name = "EXPR")]
    cron: Option<String>,
    /// IANA time zone of --cron (default: agent.timezone, else the system's).
    #[arg(long, requires = "cron", value_name = "ZONE")]
    tz: Option<String>,
    /// A system event for the main session.
    #[arg(long, value_name = "TEXT")]
    system_event: Option<String>,
    /// A message for an agent turn on the job's own session.
    #[arg(long, value_name = "TEXT")]
    message: Option<String>,
    /// main (system events) or isolated (agent turns); follows the payload by default.
    #[arg(long, value_parser = ["main", "isolated"])]
    session: Option<String>,
    /// When a main-session job wakes the agent.
    #[arg(long, value_parser = ["now", "next-heartbeat"], default_value = "next-heartbeat")]
    wake: String,
    /// Remove the job after its first successful run.
    #[arg(long)]
    delete_after_run: bool,
    /// Deliver the reply to --channel.
    #[arg(long, requires = "channel")]
    announce: bool,
    /// webchat, last (where the owner last wrote from), or a channel: telegram, discord,
    /// slack, matrix, email or irc.
    #[arg(long, requires = "announce", value_parser = announce_channels())]
    channel: Option<String>,
    /// A recipient on the channel (a chat id, channel id, room, address, IRC channel or nick).
    #[arg(long, requires = "announce")]
    to: Option<String>,
    /// A model for the turn (provider/model).
    #[arg(long)]
    model: Option<String>,
    /// A thinking level for the turn.
    #[arg(long)]
    thinking: Option<String>,
    /// Most tokens one run may use (with --message); a run over it ends with BudgetExceeded
    /// and the job keeps its schedule.
    #[arg(long, value_name = "N")]
    budget_tokens: Option<u64>,
    /// Print the stored job as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(home_path: &Path, args: CronArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let failed = |e: &dyn std::fmt::Display| CliError::failed("cron", e.to_string());
    // With the state in PostgreSQL the jobs are there (ARCHITECTURE.md §6.3).
    let settings = Config::load(&home.join(layout::CONFIG))?;
    lurkbot_agent::setup::attach_state(&home, &settings).map_err(|e| failed(&e))?;
    let store = CronStore::open(&home);
    let now = lurkbot_core::now_ms();
    match args {
        CronArgs::Add(add) => {
            let json = add.json;
            let job = new_job(*add, &settings, now)?;
            let job = store.add(job, now).map_err(|e| match e {
                lurkbot_agent::cron::StoreError::Job(e) => CliError::usage("cron", e.to_string()),
                other => failed(&other),
            })?;
            if json {
                print(&serde_json::to_string_pretty(&job)?)
            } else {
                print(&format!(
                    "added {} ({}); next run {}",
                    job.id,
                    job.name,
                    job.state.next_run_at_ms.map_or("never".into(), rfc3339)
                ))
            }
        }
        CronArgs::List { json } => {
            let jobs = store.jobs().map_err(|e| failed(&e))?;
            if json {
                return print(&serde_json::to_string_pretty(&jobs)?);
            }
            print(&table(&jobs))
        }
        CronArgs::Rm { id } => {
            store.remove(&id).map_err(|e| failed(&e))?;
            print(&format!("removed {id}"))
        }
        CronArgs::Enable { id } => {
            let job = store.set_enabled(&id, true, now).map_err(|e| failed(&e))?;
            print(&format!(
                "enabled {id}; next run {}",
                job.state.next_run_at_ms.map_or("never".into(), rfc3339)
            ))
        }
        CronArgs::Disable { id } => {
            store.set_enabled(&id, false, now).map_err(|e| failed(&e))?;
            print(&format!("disabled {id}"))
        }
        CronArgs::Run { id, force } => run_now(&home, &store, &id, force),
        CronArgs::Runs { id, json } => {
            let runs = store.runs(&id).map_err(|e| failed(&e))?;
            if json {
                return print(&serde_json::to_string(&runs)?);
            }
            let mut out = format!("{} run(s) of {id}\n", runs.len());
            for r in &runs {
                out.push_str(&format!(
                    "{}  {:<7}  {} ms  {}{}\n",
                    rfc3339(r.ts),
                    status_word(r.status),
                    r.duration_ms,
                    r.session_key,
                    r.error
                        .as_deref()
                        .map(|e| format!("  {}", lurkbot_core::printable(e)))
                        .unwrap_or_default()
                ));
            }
            crate::run::print_stdout(&out)?;
            Ok(())
        }
    }
}

fn print(text: &str) -> CliResult {
    crate::run::print_stdout(&format!("{text}\n"))?;
    Ok(())
}

fn status_word(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Ok => "ok",
        RunStatus::Error => "error",
        RunStatus::Skipped => "skipped",
    }
}

fn new_job(add: AddArgs, config: &Config, now: u64) -> Result<CronJob, CliError> {
    let usage = |e: &dyn std::fmt::Display| CliError::usage("cron", e.to_string());
    let schedule = if let Some(at) = &add.at {
        Schedule::At {
            at_ms: parse_at(at, now).map_err(|e| usage(&e))?,
        }
    } else if let Some(every) = &add.every {
        let every_ms = parse_period(every).map_err(|e| usage(&e))?;
        Schedule::Every {
            every_ms,
            anchor_ms: now.saturating_add(every_ms),
        }
    } else {
        Schedule::Cron {
            expr: add.cron.clone().unwrap_or_default(),
            tz: add.tz.clone().or_else(|| config.agent.timezone.clone()),
        }
    };
    let payload = match (&add.system_event, &add.message) {
        (Some(text), _) => Payload::SystemEvent { text: text.clone() },
        (None, message) => Payload::AgentTurn {
            message: message.clone().unwrap_or_default(),
            model: add.model.clone(),
            thinking: add.thinking.clone(),
            timeout_seconds: None,
            budget_tokens: add.budget_tokens,
        },
    };
    let session_target = match add.session.as_deref() {
        Some("main") => SessionTarget::Main,
        Some(_) => SessionTarget::Isolated,
        None if add.system_event.is_some() => SessionTarget::Main,
        None => SessionTarget::Isolated,
    };
    Ok(CronJob {
        id: String::new(),
        name: add.name,
        enabled: true,
        created_at_ms: now,
        updated_at_ms: now,
        schedule,
        session_target,
        wake_mode: if add.wake == "next-heartbeat" {
            WakeMode::NextHeartbeat
        } else {
            WakeMode::Now
        },
        payload,
        delete_after_run: add.delete_after_run,
        created_by: lurkbot_agent::gate::Asker::Owner,
        delivery: match add.channel {
            Some(channel) if add.announce => Delivery::Announce {
                channel,
                to: add.to,
            },
            _ => Delivery::None,
        },
        state: Default::default(),
    })
}

fn table(jobs: &[CronJob]) -> String {
    let mut out = format!("{} job(s)\n", jobs.len());
    for job in jobs {
        let schedule = match &job.schedule {
            Schedule::At { at_ms } => format!("at {}", rfc3339(*at_ms)),
            Schedule::Every { every_ms, .. } => format!("every {}s", every_ms / 1000),
            Schedule::Cron { expr, tz } => {
                format!(
                    "cron \"{expr}\" {}",
                    tz.as_deref().unwrap_or("(system zone)")
                )
            }
        };
        let last = match (job.state.last_status, &job.state.last_error) {
            (Some(status), Some(error)) => format!("{}: {error}", status_word(status)),
            (Some(status), None) => status_word(status).to_string(),
            (None, _) => "never ran".into(),
        };
        out.push_str(&format!(
            "{}  {}  {}  {}  next {}  last {}\n",
            job.id,
            if job.enabled { "enabled " } else { "disabled" },
            lurkbot_core::printable(&job.name),
            schedule,
            job.state.next_run_at_ms.map_or("-".into(), rfc3339),
            lurkbot_core::printable(&last)
        ));
    }
    out
}

fn run_now(home: &Home, store: &CronStore, id: &str, force: bool) -> CliResult {
    let config = Config::load(&home.join(layout::CONFIG))?;
    let local = LocalRuntime::new(home.clone(), config, Arc::new(NoHuman), Arc::new(|_, _| {}));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mode = if force { RunMode::Force } else { RunMode::Due };
    let clock = lurkbot_core::now_ms;
    let report = runtime
        .block_on(async {
            let report = run_job(&*local, store, id, mode, &clock).await;
            local.idle().await;
            report
        })
        .map_err(|e| match e {
            lurkbot_agent::cron::RunError::NotDue { .. } => CliError::usage("cron", e.to_string()),
            other => CliError::failed("cron", other.to_string()),
        })?;
    if let Some(reply) = &report.reply {
        crate::run::print_stdout(&format!("{}\n", lurkbot_core::printable(reply)))?;
    }
    match report.record.status {
        RunStatus::Error => Err(CliError::failed(
            "cron",
            format!("{id} failed: {}", report.record.error.unwrap_or_default()),
        )),
        _ => {
            eprintln!(
                "{id}: {} in {} ms on {}",
                status_word(report.record.status),
                report.record.duration_ms,
                report.record.session_key
            );
            Ok(())
        }
    }
}

/// `--channel` values: `webchat`, `last` and every messaging channel.
fn announce_channels() -> clap::builder::PossibleValuesParser {
    let mut names = vec!["webchat", "last"];
    names.extend(lurkbot_core::CHANNEL_NAMES.iter().copied());
    clap::builder::PossibleValuesParser::new(names)
}
