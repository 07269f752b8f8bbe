//! The gateway's timers (ARCHITECTURE.md §7): the cron scheduler and the heartbeat. Only the
//! gateway holding the state store's lease `scheduler` (ARCHITECTURE.md §6.3) runs them, so
//! several gateways — on one home or on one PostgreSQL database — never run a job twice (the
//! others stand by, try the lease every 2 s and take over when its holder stops or dies; the
//! holder looks again before each round of due jobs, and stands by if it lost it). Due jobs
//! run concurrently, each under its own run lock; jobs missed while the gateway was down are
//! due at start and run once (the next run is computed from "now"), or — with
//! `[cron] catch_up = "none"` — logged as skipped and left for their next time. The scheduler sleeps until
//! the earliest next run, at most 10 s (so jobs added by the CLI are seen), or until a `cron.*`
//! method wakes it. Each run and each heartbeat is reported on the hub.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_agent::cron::{CronStore, RunError, RunMode, RunReport, run_job_reporting};
use lurkbot_agent::heartbeat::run_heartbeat;
use lurkbot_core::now_ms;
use serde_json::to_value;

use crate::events::hub::Hub;
use crate::ops::autonomy::Autonomy;
use crate::protocol::{CronEvent, Event};
use crate::turns::host::SessionHost;
use crate::turns::runtime::HostRuntime;

/// Longest the scheduler sleeps between looks at `jobs.json`.
const MAX_SLEEP: Duration = Duration::from_secs(10);
/// How often a gateway without the scheduler's lease tries to take it.
const LEASE_RETRY: Duration = Duration::from_millis(lurkbot_state::LEASE_RENEW_MS);
/// The lease of the gateway that runs the timers.
const SCHEDULER_LEASE: &str = "scheduler";

/// What the timers may use: the session host their runs start on (its settings, home and
/// hub) and their own state, shared with the `cron.*` methods.
#[derive(Clone)]
pub(crate) struct Timers {
    /// The host the jobs and heartbeats run on.
    pub(crate) host: Arc<SessionHost>,
    /// The scheduler's wake-up, state and last heartbeat.
    pub(crate) autonomy: Arc<Autonomy>,
    /// The host's home.
    pub(crate) home: lurkbot_core::Home,
    /// The host's hub, where runs are reported.
    pub(crate) hub: Hub,
}

impl Timers {
    /// The timers of `host`.
    pub(crate) fn new(host: Arc<SessionHost>, autonomy: Arc<Autonomy>) -> Self {
        let (home, hub) = (host.home.clone(), host.hub.clone());
        Self {
            host,
            autonomy,
            home,
            hub,
        }
    }

    /// The settings in force now.
    pub(crate) fn config(&self) -> Arc<lurkbot_core::Config> {
        self.host.config()
    }
}

/// The runtime cron jobs and heartbeats use.
pub(crate) fn runtime(state: &Timers) -> Arc<HostRuntime> {
    Arc::new(HostRuntime::new(
        Arc::downgrade(&state.host),
        state.host.subagents.clone(),
    ))
}

/// Starts the timers: the scheduler's lease is tried before this returns (so `cron.status`
/// says at once whether this gateway runs them); the task runs until the gateway stops (the
/// caller aborts it).
pub(crate) fn start(state: Timers) -> tokio::task::JoinHandle<()> {
    let store = CronStore::open(&state.home);
    let mut held = holds_lease(&state);
    tokio::spawn(async move {
        loop {
            while !held {
                tokio::time::sleep(LEASE_RETRY).await;
                held = holds_lease(&state);
            }
            // Runs until the lease is found lost (another gateway took it: this one stalled
            // past its expiry), then stands by again.
            tokio::select! {
                () = cron_loop(&state, &store) => {}
                () = heartbeat_loop(&state) => {}
            }
            held = false;
        }
    })
}

/// Whether this gateway holds (or now takes) the scheduler's lease, recorded in the state.
fn holds_lease(state: &Timers) -> bool {
    let Some(store) = state.host.store() else {
        return false;
    };
    match store.take_lease(SCHEDULER_LEASE) {
        Ok(true) => {
            if state.autonomy.scheduler_state() != "running" {
                tracing::info!("this gateway runs the cron jobs and heartbeat");
            }
            state.autonomy.set_state("running");
            true
        }
        Ok(false) => {
            if state.autonomy.scheduler_state() != "standby" {
                tracing::info!(
                    "another gateway runs the cron jobs and heartbeat; this one stands by"
                );
            }
            state.autonomy.set_state("standby");
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "the scheduler's lease cannot be taken; trying again");
            false
        }
    }
}

async fn cron_loop(state: &Timers, store: &CronStore) {
    // What fell due while no gateway ran the scheduler: run once below (`one`), or skipped.
    if state.config().cron.catch_up == lurkbot_core::CatchUp::None {
        match store.skip_missed(now_ms()) {
            Ok(skipped) => {
                for id in skipped {
                    tracing::info!(
                        job = id.as_str(),
                        "cron run missed while down: skipped (catch_up = none)"
                    );
                    state.hub.emit(Event::Cron(CronEvent {
                        job_id: id,
                        action: "finished".into(),
                        status: Some("skipped".into()),
                        error: Some(lurkbot_agent::cron::MISSED.into()),
                        duration_ms: None,
                        next_run_at_ms: None,
                    }));
                }
            }
            Err(e) => tracing::warn!(error = %e, "missed cron runs not skipped"),
        }
    }
    loop {
        if !holds_lease(state) {
            return;
        }
        let now = now_ms();
        // One read of jobs.json per look: the due jobs and the next run.
        let jobs = store.jobs().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cron jobs not readable");
            Vec::new()
        });
        let enabled = jobs.iter().filter(|j| j.enabled);
        for job in enabled
            .clone()
            .filter(|j| j.state.next_run_at_ms.is_some_and(|t| t <= now))
        {
            let state = state.clone();
            let store = store.clone();
            let id = job.id.clone();
            tokio::spawn(async move {
                run_and_report(&state, &store, &id, RunMode::Due).await;
            });
        }
        let next = enabled.filter_map(|j| j.state.next_run_at_ms).min();
        let sleep = next.map_or(MAX_SLEEP, |t| {
            Duration::from_millis(t.saturating_sub(now_ms()).max(50)).min(MAX_SLEEP)
        });
        tokio::select! {
            () = tokio::time::sleep(sleep) => {}
            () = state.autonomy.wake.notified() => {}
        }
    }
}

/// Runs job `id`, reporting `started` (once it holds the job's lock) and `finished` on the
/// hub. A job already running (here or in another process) is left alone, without events.
pub(crate) async fn run_and_report(
    state: &Timers,
    store: &CronStore,
    id: &str,
    mode: RunMode,
) -> Option<RunReport> {
    let runtime = runtime(state);
    let clock = now_ms;
    let started = || emit(state, id, "started", None);
    match run_job_reporting(&*runtime, store, id, mode, &clock, &started).await {
        Ok(report) => {
            emit(state, id, "finished", Some(&report));
            Some(report)
        }
        Err(RunError::Store(lurkbot_agent::cron::StoreError::Busy(_))) => None,
        Err(e) => {
            tracing::warn!(job = id, error = %e, "cron job not run");
            state.hub.emit(Event::Cron(CronEvent {
                job_id: id.to_string(),
                action: "finished".into(),
                status: Some("skipped".into()),
                error: Some(e.to_string()),
                duration_ms: None,
                next_run_at_ms: None,
            }));
            None
        }
    }
}

/// A `cron` event; `report` for a finished run.
pub(crate) fn emit(state: &Timers, id: &str, action: &str, report: Option<&RunReport>) {
    let status = report
        .and_then(|r| to_value(r.record.status).ok())
        .and_then(|v| v.as_str().map(str::to_string));
    state.hub.emit(Event::Cron(CronEvent {
        job_id: id.to_string(),
        action: action.to_string(),
        status,
        error: report.and_then(|r| r.record.error.clone()),
        duration_ms: report.map(|r| r.record.duration_ms),
        next_run_at_ms: report
            .and_then(|r| r.job.as_ref())
            .and_then(|j| j.state.next_run_at_ms),
    }));
}

async fn heartbeat_loop(state: &Timers) {
    loop {
        let config = state.config();
        let every = lurkbot_core::parse_period_ms(&config.heartbeat.every).unwrap_or(300_000);
        tokio::time::sleep(Duration::from_millis(every)).await;
        let config = state.config();
        if !config.heartbeat.enabled {
            continue;
        }
        let runtime = runtime(state);
        let event = run_heartbeat(&*runtime, &state.home, &config, now_ms()).await;
        tracing::info!(status = ?event.status, reason = event.reason.as_deref().unwrap_or(""), "heartbeat");
        if let Ok(mut last) = state.autonomy.last_heartbeat.lock() {
            *last = Some(event.clone());
        }
        state.hub.emit(Event::Heartbeat(event));
    }
}
