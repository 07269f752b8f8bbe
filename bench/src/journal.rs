//! `lurkbot-bench journal`: what the turn journal (ARCHITECTURE.md §6.3) adds to one turn.
//!
//! Turns with one tool round trip (`session_status`, then an answer) against the scripted
//! model over loopback HTTP, alternately without the journal and with it as the gateway keeps
//! it — the turn admitted (one durable commit), marked running, its base and each step and
//! call recorded, and ended (one durable commit) — on one home and one store, so both kinds
//! share the disk, the caches and the moment. p50 and p99 of each kind, and their difference
//! against the budget (≤ 1 ms at p50 on the embedded store, ARCHITECTURE.md §9). Run with the
//! home on the disk and on tmpfs (`/dev/shm`): the difference between the two is this disk's
//! sync latency. Then the same on PostgreSQL (`[state] url`): a cluster of Debian's
//! PostgreSQL on loopback with its defaults (fsync on), the home on the disk, and the home's
//! state there as a gateway keeps it — the journal, and the session index, transcript and usage
//! records too (`lurkbot_agent::shared_state`). What a whole journalled turn takes there beyond
//! the same turn on the embedded store on disk is held to ≤ 5 ms at p50 (ARCHITECTURE.md §9).

use std::path::Path;
use std::time::Instant;

use lurkbot_agent::Agent;
use lurkbot_agent::journal::Journal;
use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_llm::fake::FakeProvider;
use lurkbot_state::{Location, NewTurn, Store};
use serde_json::json;

use crate::agent::{failover_for, places, scripted};

/// Budget for what the journal adds to one turn at p50, ms.
const JOURNAL_BUDGET_MS: f64 = 1.0;
/// Budget for what the journal on PostgreSQL adds to one turn beyond the embedded store's, ms.
const POSTGRES_BUDGET_MS: f64 = 5.0;

pub(crate) fn journal(turns: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let places = places();
    println!("turn journal: {turns} turns of each kind, one tool round trip each, alternating");
    let mut on_disk = Vec::new();
    for (place, dir) in &places {
        let (plain, journalled) =
            runtime.block_on(measure(turns, dir.as_deref(), &Location::Embedded))?;
        report(
            &format!("home on {place:<5}"),
            &plain,
            &journalled,
            JOURNAL_BUDGET_MS,
        );
        if dir.is_none() {
            on_disk = journalled;
        }
    }
    let pg = lurkbot_test_support::postgres::Postgres::start_synced();
    let url = pg.database("bench");
    let location = Location::Postgres(Box::new(
        lurkbot_state::StateUrl::parse(&url).map_err(|e| e.to_string())?,
    ));
    let (plain, journalled) = runtime.block_on(measure(turns, None, &location))?;
    report("PostgreSQL  ", &plain, &journalled, f64::INFINITY);
    let (e50, e99) = (percentile(&on_disk, 50), percentile(&on_disk, 99));
    let (p50, p99) = (percentile(&journalled, 50), percentile(&journalled, 99));
    let added = p50 - e50;
    println!(
        "  a whole turn on PostgreSQL (journal, session index, transcript, usage) p50 {p50:.3} ms p99 {p99:.3} ms against the embedded store on disk p50 {e50:.3} ms p99 {e99:.3} ms: added p50 {added:.3} ms p99 {:.3} ms (budget {POSTGRES_BUDGET_MS} ms at p50: {})",
        p99 - e99,
        if added <= POSTGRES_BUDGET_MS {
            "within"
        } else {
            "OVER"
        }
    );
    Ok(())
}

/// Prints one line of figures: what the journal added at p50, against `budget` (none when
/// infinite: the whole turn's line judges PostgreSQL).
fn report(what: &str, plain: &[f64], journalled: &[f64], budget: f64) {
    let (p50, p99) = (percentile(plain, 50), percentile(plain, 99));
    let (j50, j99) = (percentile(journalled, 50), percentile(journalled, 99));
    let added = j50 - p50;
    let verdict = if budget.is_infinite() {
        String::new()
    } else {
        format!(
            " (budget {budget} ms at p50: {})",
            if added <= budget { "within" } else { "OVER" }
        )
    };
    println!(
        "  {what}: without p50 {p50:.3} ms p99 {p99:.3} ms; with the journal p50 {j50:.3} ms p99 {j99:.3} ms; added p50 {added:.3} ms p99 {:.3} ms{verdict}",
        j99 - p99,
    );
}

/// Per-turn milliseconds without and with the journal.
async fn measure(
    turns: usize,
    place: Option<&Path>,
    location: &Location,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let dir = match place {
        Some(place) => tempfile::tempdir_in(place),
        None => tempfile::tempdir(),
    }
    .map_err(|e| e.to_string())?;
    let home = Home::open(dir.path()).map_err(|e| e.to_string())?;
    lurkbot_core::init_home(&home, &[]).map_err(|e| e.to_string())?;
    let store = Store::open_at(&home, location, None).map_err(|e| e.to_string())?;
    if store.backend() == "postgres" {
        // As a gateway keeps it: the sessions, transcripts and usage in the database too.
        lurkbot_agent::shared_state::share(&home, &store);
    }
    let fake = FakeProvider::start(Vec::new()).await;
    fake.respond(scripted(1));
    fake.record(false);
    let mut agent = Agent::new(home.clone(), Config::default(), failover_for(&fake)?);
    let (plain_key, journal_key) = (
        SessionKey::main(),
        SessionKey::parse("agent:main:dm:bench:journal").map_err(|e| e.to_string())?,
    );
    // Warm-up: connections, files, the store's pages.
    for key in [&plain_key, &journal_key] {
        agent
            .turn(key, "status?", &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
    }
    let (mut plain, mut journalled) = (Vec::with_capacity(turns), Vec::with_capacity(turns));
    for i in 0..turns {
        let start = Instant::now();
        agent
            .turn(&plain_key, "status?", &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
        plain.push(start.elapsed().as_secs_f64() * 1000.0);

        let start = Instant::now();
        let id = format!("run_bench_{i}");
        store
            .admit(&NewTurn {
                id: id.clone(),
                source: None,
                session: journal_key.as_str().to_string(),
                origin: json!({"kind": "client"}),
                message: "status?".into(),
                options: json!({}),
            })
            .map_err(|e| e.to_string())?;
        store.begin(&id).map_err(|e| e.to_string())?;
        agent.set_journal(Some(Journal::new(store.clone(), id.clone())));
        let done = agent
            .turn(&journal_key, "status?", &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
        agent.set_journal(None);
        store
            .finish(&id, Ok(&done.text), &[])
            .map_err(|e| e.to_string())?;
        journalled.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((plain, journalled))
}

fn percentile(samples: &[f64], p: usize) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = (sorted.len() * p / 100).min(sorted.len().saturating_sub(1));
    sorted.get(at).copied().unwrap_or(0.0)
}
