//! `lurkbot-bench gateways`: several gateways on one PostgreSQL database (ARCHITECTURE.md §6.3,
//! budgets in §9), shown as separate machines would show it.
//!
//! A cluster of Debian's PostgreSQL on loopback with its defaults (every commit synced), one
//! home pointed at it (`[state] url`), the soak's scripted model (a tool call, then a sentence)
//! in this process.
//!
//! - **Scaling.** Each gateway is confined to its own CPU share (a cgroup with a CFS quota,
//!   [`QUOTA`] of a core, the same for the one-gateway run; `cpu_share.rs`), while PostgreSQL,
//!   the model and the clients run outside the quotas — as gateways on machines of their own
//!   would. The same load — API turns from [`CLIENTS`] threads, each on sessions of its own —
//!   runs against one gateway, then spread over three: turns/s of each and their ratio (budget
//!   ≥ 2.5). PostgreSQL's CPU per turn (its whole process tree, from `/proc`) gives the single
//!   database's ceiling. Without a cgroup (not root) it says so and measures on the shared
//!   cores, which then bound the ratio.
//! - **A database on another host.** Gateways reach PostgreSQL through a proxy that holds each
//!   packet 1 ms each way (`delay_proxy.rs`; this kernel has no `netem`). The failover: the
//!   gateway holding the schedule is SIGKILLed and the time until another holds it is measured
//!   (budget 15 s). A turn's added cost: sequential turns on one gateway there against the same
//!   on the embedded store, p50 each; the round trips a turn makes are counted at the proxy,
//!   and the budget is 5 ms plus 2 ms for each.
//! - Idle RSS of a gateway on PostgreSQL 10 s after its start (budget 16 MB), and of each after
//!   the load.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lurkbot_core::Home;
use lurkbot_state::{Location, StateUrl, Store};
use lurkbot_test_support::postgres::Postgres;

use lurkbot_test_support::ports::free_port;

use crate::cpu_share::{CpuShare, process_cpu, tree_cpu};
use crate::delay_proxy::DelayProxy;
use crate::gateway::{health_ok, rss_kib};
use crate::soak::{api_turn, scripted_model};

/// Client threads sending turns at once.
const CLIENTS: usize = 12;
/// Each gateway's CPU share, in cores.
const QUOTA: f64 = 0.15;
/// Budget: three gateways' turns/s over one's.
const SCALE_BUDGET: f64 = 2.5;
/// Budget: a killed gateway's work taken over, s.
const FAILOVER_BUDGET_S: f64 = 15.0;
/// Budget: a gateway on PostgreSQL idle, MB.
const IDLE_BUDGET_MB: f64 = 16.0;
/// Budget: what a turn on PostgreSQL adds over the embedded store at p50, ms, beyond its round
/// trips.
const TURN_BUDGET_MS: f64 = 5.0;
/// The database's distance, each way.
const DELAY: Duration = Duration::from_millis(1);
/// Sequential turns of the cost measurement.
const SEQUENTIAL: usize = 200;

/// A gateway process of the bench, killed when dropped.
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) port: u16,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start(bin: &Path, home: &Path, id: &str) -> Result<Running, String> {
    let port = free_port();
    let child = Command::new(bin)
        .arg("--home")
        .arg(home)
        .args(["gateway", "--port", &port.to_string()])
        .env("LURKBOT_GATEWAY_ID", id)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !health_ok(port) {
        if Instant::now() > deadline {
            return Err(format!("gateway {id} did not start"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Running { child, port })
}

/// `turns` API turns from [`CLIENTS`] threads spread over `ports`; turns/s.
fn load(ports: &[u16], token: &str, turns: usize) -> Result<f64, String> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (next, ports, token) = (next.clone(), ports.to_vec(), token.to_string());
            std::thread::spawn(move || -> Result<(), String> {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= turns {
                        return Ok(());
                    }
                    // A client keeps to one gateway, and its sessions with it.
                    let port = ports[c % ports.len()];
                    let session = format!("agent:main:dm:bench:c{c}-{}", n % 4);
                    api_turn(port, &token, Some(session), n)?;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().map_err(|_| "a client panicked")??;
    }
    Ok(turns as f64 / started.elapsed().as_secs_f64())
}

/// A home for the bench with its state at `url` (`None`: the embedded store); its token.
pub(crate) fn home_at(
    bin: &Path,
    home: &Path,
    model: &str,
    url: Option<&str>,
) -> Result<String, String> {
    let token = crate::soak::prepare_plain(bin, home, model)?;
    if let Some(url) = url {
        let config = home.join("config.toml");
        let mut text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
        text.push_str(&format!("\n[state]\nurl = \"{url}\"\n"));
        std::fs::write(&config, text).map_err(|e| e.to_string())?;
    }
    Ok(token)
}

/// What a measured load cost: turns/s, the gateways' and PostgreSQL's CPU per turn (ms).
struct Measured {
    per_second: f64,
    gateway_ms: f64,
    database_ms: f64,
}

fn measured(
    gateways: &[&Running],
    postmaster: Option<u32>,
    token: &str,
    turns: usize,
) -> Result<Measured, String> {
    let ports: Vec<u16> = gateways.iter().map(|g| g.port).collect();
    load(&ports, token, turns / 10)?; // warm-up
    let cpu = || -> (f64, f64) {
        let gateways = gateways.iter().map(|g| process_cpu(g.child.id())).sum();
        (gateways, postmaster.map_or(0.0, tree_cpu))
    };
    let before = cpu();
    let per_second = load(&ports, token, turns)?;
    let after = cpu();
    Ok(Measured {
        per_second,
        gateway_ms: (after.0 - before.0) * 1000.0 / turns as f64,
        database_ms: (after.1 - before.1) * 1000.0 / turns as f64,
    })
}

pub(crate) fn gateways(bin: &Path, turns: usize) -> Result<(), String> {
    let (_runtime, fake) = scripted_model()?;
    let pg = Postgres::start_synced();
    let url = pg.database("bench");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let home = dir.path().join("home");
    let token = home_at(bin, &home, &fake.url, Some(&url))?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "several gateways on PostgreSQL 15 (loopback, fsync on), {turns} API turns (a tool call and an answer each) from {CLIENTS} clients, {cores} cores"
    );

    let one = start(bin, &home, "gw-1")?;
    std::thread::sleep(Duration::from_secs(10));
    let fresh = rss_kib(one.child.id()) as f64 * 1024.0 / 1e6;
    println!(
        "  idle RSS of a gateway on PostgreSQL 10 s after its start: {fresh:.1} MB (budget {IDLE_BUDGET_MB} MB: {})",
        verdict(fresh <= IDLE_BUDGET_MB)
    );

    // Each gateway on a CPU share of its own, as on a machine of its own.
    let shares: Result<Vec<CpuShare>, String> = ["a", "b", "c"]
        .iter()
        .map(|n| CpuShare::new(n, QUOTA))
        .collect();
    let shares = match shares {
        Ok(shares) => {
            shares[0].add(one.child.id())?;
            println!(
                "  each gateway confined to {QUOTA} of a core (a cgroup with a CFS quota); PostgreSQL, the model and the clients outside the quotas"
            );
            Some(shares)
        }
        Err(why) => {
            println!(
                "  no CPU share can be made here ({why}): the gateways share the machine's {cores} cores with PostgreSQL, the model and the clients, which then bound the ratio"
            );
            None
        }
    };
    let postmaster = pg.postmaster_pid();
    let single = measured(&[&one], postmaster, &token, turns)?;
    let two = start(bin, &home, "gw-2")?;
    let three = start(bin, &home, "gw-3")?;
    if let Some(shares) = &shares {
        shares[1].add(two.child.id())?;
        shares[2].add(three.child.id())?;
    }
    let spread = measured(&[&one, &two, &three], postmaster, &token, turns)?;
    let ratio = spread.per_second / single.per_second;
    let (alone, each) = if shares.is_some() {
        (format!(" on {QUOTA} of a core"), " (each on its own share)")
    } else {
        (String::new(), "")
    };
    println!(
        "  one gateway{alone}: {:.1} turns/s; three{each}: {:.1} turns/s: {ratio:.2}× (budget ≥ {SCALE_BUDGET}×: {}){}",
        single.per_second,
        spread.per_second,
        verdict(ratio >= SCALE_BUDGET),
        if shares.is_none() && cores < 3 {
            format!(" — {cores} cores for three gateways, their database and the model")
        } else {
            String::new()
        }
    );
    if let Some(shares) = &shares {
        let throttled: Vec<String> = shares
            .iter()
            .map(|s| s.throttled_periods().to_string())
            .collect();
        println!(
            "  periods each share was held at its quota: {} (the quota, not the database, bounds each gateway)",
            throttled.join(", ")
        );
    }
    println!(
        "  a gateway's own CPU per turn: {:.2} ms alone, {:.2} ms among three",
        single.gateway_ms, spread.gateway_ms
    );
    if postmaster.is_some() {
        let per_core = 1000.0 / spread.database_ms.max(f64::EPSILON);
        println!(
            "  PostgreSQL's CPU per turn: {:.2} ms with one gateway, {:.2} ms with three: one core of PostgreSQL serves about {per_core:.0} turns/s",
            single.database_ms, spread.database_ms
        );
    }

    std::thread::sleep(Duration::from_secs(5));
    let idle: Vec<f64> = [&one, &two, &three]
        .iter()
        .map(|g| rss_kib(g.child.id()) as f64 * 1024.0 / 1e6)
        .collect();
    println!(
        "  RSS 5 s after the load: {} MB (the agents, sessions and allocator arenas the turns left, as on the embedded store)",
        idle.iter()
            .map(|m| format!("{m:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    drop((one, two, three));
    drop(shares);

    // The database on "another host": 1 ms away each way.
    let proxy = DelayProxy::start(pg.port(), DELAY)?;
    let far_url = pg
        .database("far")
        .replace(&format!(":{}/", pg.port()), &format!(":{}/", proxy.port()));
    println!(
        "  PostgreSQL {} ms away each way (a delaying proxy):",
        DELAY.as_millis()
    );
    let far_home = dir.path().join("far");
    let far_token = home_at(bin, &far_home, &fake.url, Some(&far_url))?;
    failover(bin, &far_home, &far_url)?;
    turn_cost(
        bin,
        dir.path(),
        &fake.url,
        (&far_home, &far_url, &far_token),
        &proxy,
    )
}

/// Three gateways; the scheduler's holder SIGKILLed; the time until another holds it.
fn failover(bin: &Path, home: &Path, url: &str) -> Result<(), String> {
    let gateways = vec![
        ("gw-1", start(bin, home, "gw-1")?),
        ("gw-2", start(bin, home, "gw-2")?),
        ("gw-3", start(bin, home, "gw-3")?),
    ];
    let probe = Store::open_at(
        &Home::open(home).map_err(|e| e.to_string())?,
        &Location::Postgres(Box::new(StateUrl::parse(url).map_err(|e| e.to_string())?)),
        None,
    )
    .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let holder = loop {
        if let Some(holder) = probe.lease_holder("scheduler").map_err(|e| e.to_string())? {
            break holder;
        }
        if Instant::now() > deadline {
            return Err("nobody holds the schedule".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut gateways = gateways;
    let index = gateways
        .iter()
        .position(|(id, _)| *id == holder)
        .ok_or("the holder is not one of ours")?;
    let (_, mut killed) = gateways.remove(index);
    let _ = killed.child.kill();
    let _ = killed.child.wait();
    let at = Instant::now();
    loop {
        let now = probe.lease_holder("scheduler").map_err(|e| e.to_string())?;
        if now.as_deref().is_some_and(|h| h != holder) {
            break;
        }
        if at.elapsed() > Duration::from_secs(30) {
            return Err("the schedule was not taken over in 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let failover = at.elapsed().as_secs_f64();
    println!(
        "    failover: {holder} SIGKILLed, the schedule held by another in {failover:.2} s (budget {FAILOVER_BUDGET_S} s: {})",
        verdict(failover <= FAILOVER_BUDGET_S)
    );
    Ok(())
}

/// Sequential turns on one gateway on the far database and on one on the embedded store:
/// p50 of each, the round trips a turn makes (counted at the proxy), and the added cost
/// against its budget.
fn turn_cost(
    bin: &Path,
    dir: &Path,
    model: &str,
    (far_home, far_url, far_token): (&Path, &str, &str),
    proxy: &DelayProxy,
) -> Result<(), String> {
    let near_home = dir.join("embedded");
    let near_token = home_at(bin, &near_home, model, None)?;
    let near = start(bin, &near_home, "gw-near")?;
    let far = start(bin, far_home, "gw-far")?;
    let sequential = |gw: &Running, token: &str| -> Result<Vec<f64>, String> {
        let mut took = Vec::with_capacity(SEQUENTIAL);
        for n in 0..SEQUENTIAL + SEQUENTIAL / 10 {
            let session = Some(format!("agent:main:dm:bench:seq{}", n % 4));
            let at = Instant::now();
            api_turn(gw.port, token, session, n)?;
            if n >= SEQUENTIAL / 10 {
                took.push(at.elapsed().as_secs_f64() * 1000.0);
            }
        }
        took.sort_by(f64::total_cmp);
        Ok(took)
    };
    let embedded = sequential(&near, &near_token)?;
    let chunks = proxy.client_chunks();
    let on_postgres = sequential(&far, far_token)?;
    let trips = (proxy.client_chunks() - chunks) as f64 / (SEQUENTIAL + SEQUENTIAL / 10) as f64;
    let trip_ms = round_trip_ms(far_home, far_url)?;
    let p50 = |v: &[f64]| v[v.len() / 2];
    let added = p50(&on_postgres) - p50(&embedded);
    let budget = TURN_BUDGET_MS + trips * trip_ms;
    println!(
        "    one round trip to the database: {trip_ms:.2} ms at p50 (a query of one row; {} ms of it the delay)",
        2 * DELAY.as_millis()
    );
    println!(
        "    a turn (two model calls, one tool call), {SEQUENTIAL} in a row: p50 {:.2} ms on PostgreSQL, {:.2} ms on the embedded store: +{added:.2} ms for {trips:.1} round trips to the database (every statement on every connection, counted at the proxy; budget {TURN_BUDGET_MS} ms + {trips:.1} × {trip_ms:.2} ms = {budget:.1} ms: {})",
        p50(&on_postgres),
        p50(&embedded),
        verdict(added <= budget)
    );
    Ok(())
}

/// What one round trip to the far database takes, p50 of 200 one-row queries on a store's
/// connection (a prepared statement: one round trip; the delay, the proxy's hand-offs and the
/// server's answer).
fn round_trip_ms(home: &Path, url: &str) -> Result<f64, String> {
    let store = Store::open_at(
        &Home::open(home).map_err(|e| e.to_string())?,
        &Location::Postgres(Box::new(StateUrl::parse(url).map_err(|e| e.to_string())?)),
        None,
    )
    .map_err(|e| e.to_string())?;
    let mut took: Vec<f64> = (0..200)
        .map(|_| {
            let at = Instant::now();
            store
                .turn("run_calibration")
                .map(|_| at.elapsed().as_secs_f64() * 1000.0)
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    took.sort_by(f64::total_cmp);
    Ok(took[took.len() / 2])
}

fn verdict(within: bool) -> &'static str {
    if within { "within" } else { "OVER" }
}
