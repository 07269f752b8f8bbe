//! `lurkbot-bench gateways`: several gateways on one PostgreSQL database (ARCHITECTURE.md §6.3, budgets in §9).
//!
//! A cluster of Debian's PostgreSQL on loopback with its defaults (every commit synced), one
//! home pointed at it (`[state] url`), the soak's scripted model (a tool call, then a sentence)
//! in this process. The same load — API turns from `CLIENTS` threads, each on sessions of its
//! own — runs against one gateway, then spread over three; turns/s of each and their ratio
//! (budget ≥ 2.5; on a machine with fewer cores than gateways the cores, not the gateways,
//! bound it, and the figure says so). Then the failover: the gateway holding the schedule is
//! SIGKILLed and the time until another holds it is measured (budget 15 s). Idle RSS of a
//! gateway on PostgreSQL 10 s after its start (budget 16 MB), and of each after the load.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lurkbot_core::Home;
use lurkbot_state::{Location, StateUrl, Store};
use lurkbot_test_support::postgres::Postgres;

use lurkbot_test_support::ports::free_port;

use crate::gateway::{health_ok, rss_kib};
use crate::soak::{api_turn, scripted_model};

/// Client threads sending turns at once.
const CLIENTS: usize = 12;
/// Budget: three gateways' turns/s over one's.
const SCALE_BUDGET: f64 = 2.5;
/// Budget: a killed gateway's work taken over, s.
const FAILOVER_BUDGET_S: f64 = 15.0;
/// Budget: a gateway on PostgreSQL idle, MB.
const IDLE_BUDGET_MB: f64 = 16.0;

/// A gateway process of the bench, killed when dropped.
struct Running {
    child: Child,
    port: u16,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path, home: &Path, id: &str) -> Result<Running, String> {
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

pub(crate) fn gateways(bin: &Path, turns: usize) -> Result<(), String> {
    let (_runtime, fake) = scripted_model()?;
    let pg = Postgres::start_synced();
    let url = pg.database("bench");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let home = dir.path().join("home");
    let token = crate::soak::prepare_plain(bin, &home, &fake.url)?;
    let config = home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
    text.push_str(&format!("\n[state]\nurl = \"{url}\"\n"));
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
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
    load(&[one.port], &token, turns / 10)?; // warm-up
    let single = load(&[one.port], &token, turns)?;
    let two = start(bin, &home, "gw-2")?;
    let three = start(bin, &home, "gw-3")?;
    let ports = [one.port, two.port, three.port];
    load(&ports, &token, turns / 10)?;
    let spread = load(&ports, &token, turns)?;
    let ratio = spread / single;
    println!(
        "  one gateway {single:.0} turns/s; three {spread:.0} turns/s: {ratio:.2}× (budget ≥ {SCALE_BUDGET}×: {}){}",
        verdict(ratio >= SCALE_BUDGET),
        if cores < 3 {
            format!(" — {cores} cores for three gateways, their database and the model")
        } else {
            String::new()
        }
    );

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

    // Failover: the scheduler's holder killed, another holds the schedule.
    let probe = Store::open_at(
        &Home::open(&home).map_err(|e| e.to_string())?,
        &Location::Postgres(Box::new(StateUrl::parse(&url).map_err(|e| e.to_string())?)),
        None,
    )
    .map_err(|e| e.to_string())?;
    let holder = probe
        .lease_holder("scheduler")
        .map_err(|e| e.to_string())?
        .ok_or("nobody holds the schedule")?;
    let mut gateways = vec![("gw-1", one), ("gw-2", two), ("gw-3", three)];
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
        "  failover: {holder} SIGKILLed, the schedule held by another in {failover:.2} s (budget {FAILOVER_BUDGET_S} s: {})",
        verdict(failover <= FAILOVER_BUDGET_S)
    );
    Ok(())
}

fn verdict(within: bool) -> &'static str {
    if within { "within" } else { "OVER" }
}
