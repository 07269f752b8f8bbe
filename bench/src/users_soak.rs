//! `lurkbot-bench users`: twenty users sharing one gateway (ARCHITECTURE.md §6.2, §9).
//!
//! A release gateway with `[users] enabled` and 20 users (added with `lurkbot users add`), the
//! scripted model answering every turn with one `session_status` call and then text:
//! - one **heavy** user runs `--runs` OpenAI-API turns (default 4,000) from eight clients at
//!   once, on 200 stateful sessions (25 per client, as the single-user soak spreads its turns);
//! - the other 19 users each run `--cycles` WebSocket cycles (default 40: connect with their
//!   own token, `chat.send`, `agent.wait`, disconnect), three users at a time;
//! - one light user holds a socket and sends `health` every 20 ms throughout, before the load
//!   (idle) and during it.
//!
//! It fails when the RSS after the run exceeds the RSS after the first 100 turns by more than
//! 8 MiB (the bounded-memory budget), when any turn fails, or when the light user's `health`
//! p99 under the heavy user's load is over 50 ms (starved). It reports the p50/p99 at idle and
//! under load, and what each user's state costs (RSS with 20 users' states made, against the
//! same gateway before any user connected).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use lurkbot_gateway::protocol;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::gateway::{rss_kib, rss_split_kib, spawn_ready};
use crate::soak::{Progress, api_turn, connect, scripted_model, ws_cycle};
use lurkbot_test_support::ports::free_port;

const USERS: usize = 20;
const HEAVY_CLIENTS: usize = 8;
const HEAVY_SESSIONS: usize = 200;
const LIGHT_AT_ONCE: usize = 3;
const GROWTH_BUDGET_KIB: u64 = 8 * 1024;
/// A light user's `health` p99 (ms) under the heavy user's load above which it counts as
/// starved.
const STARVED_MS: f64 = 50.0;

fn run(bin: &std::path::Path, home: &std::path::Path, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(bin)
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "lurkbot {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// `health` round trips (ms) on one held socket every 20 ms until `stop`.
async fn probe(port: u16, token: String, stop: Arc<AtomicBool>) -> Result<Vec<f64>, String> {
    let mut ws = connect(port, &token).await?;
    let mut times = Vec::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let id = format!("h{n}");
        let started = Instant::now();
        ws.send(Message::Text(
            protocol::request(&id, protocol::method::HEALTH, json!({}))
                .to_string()
                .into(),
        ))
        .await
        .map_err(|e| e.to_string())?;
        crate::ws_burst::wait_payload(&mut ws, &id).await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = ws.close(None).await;
    Ok(times)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn summary(mut times: Vec<f64>) -> (f64, f64, usize) {
    times.sort_by(f64::total_cmp);
    (
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.len(),
    )
}

pub(crate) fn users(bin: &std::path::Path, turns: usize, cycles: usize) -> Result<(), String> {
    let (runtime, fake) = scripted_model()?;
    let home = std::env::temp_dir().join(format!("lurkbot-bench-users-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    run(bin, &home, &["init", "--quiet"])?;
    run(
        bin,
        &home,
        &["config", "set", "agent.model", "openai/gpt-4o-mini"],
    )?;
    run(bin, &home, &["config", "set", "users.enabled", "true"])?;
    std::fs::write(
        home.join(".env"),
        format!("OPENAI_BASE_URL={}/v1\nOPENAI_API_KEY=sk-bench\n", fake.url),
    )
    .map_err(|e| e.to_string())?;
    let tokens: Vec<String> = (0..USERS)
        .map(|i| run(bin, &home, &["users", "add", &format!("u{i:02}")]))
        .collect::<Result<_, _>>()?;
    let port = free_port();
    let gw = spawn_ready(bin, &home, port)?;
    let pid = gw.child.id();
    // Settled: every user's state is made at start (their schedulers, their memory indexes).
    std::thread::sleep(Duration::from_secs(3));
    let idle_kib = rss_kib(pid);

    // The light user's `health` at idle.
    let light = tokens[USERS - 1].clone();
    let stop = Arc::new(AtomicBool::new(false));
    let idle_probe = {
        let (light, stop) = (light.clone(), stop.clone());
        runtime.spawn(async move { probe(port, light, stop).await })
    };
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let idle_times = runtime.block_on(idle_probe).map_err(|e| e.to_string())??;

    let progress = Arc::new(Progress::default());
    progress.planned(turns + cycles * (USERS - 1));
    let stop = Arc::new(AtomicBool::new(false));
    let loaded_probe = {
        let (light, stop) = (light.clone(), stop.clone());
        runtime.spawn(async move { probe(port, light, stop).await })
    };
    let start = Instant::now();
    let heavy: Vec<_> = (0..HEAVY_CLIENTS)
        .map(|c| {
            let (token, progress) = (tokens[0].clone(), progress.clone());
            std::thread::spawn(move || {
                for n in (c..turns).step_by(HEAVY_CLIENTS) {
                    // Each client its own sessions: two turns at once on one session would be
                    // refused (409) as the session is busy.
                    let per_client = HEAVY_SESSIONS / HEAVY_CLIENTS;
                    let session = format!(
                        "agent:main:dm:heavy:c{c}s{}",
                        (n / HEAVY_CLIENTS) % per_client
                    );
                    progress.done(pid, api_turn(port, &token, Some(session), n));
                }
            })
        })
        .collect();
    let light_tokens: Vec<String> = tokens[1..USERS].to_vec();
    let light_progress = progress.clone();
    runtime.block_on(async move {
        let tasks: Vec<_> = (0..LIGHT_AT_ONCE)
            .map(|lane| {
                let (tokens, progress) = (light_tokens.clone(), light_progress.clone());
                tokio::spawn(async move {
                    for (i, token) in tokens.iter().enumerate().skip(lane).step_by(LIGHT_AT_ONCE) {
                        for n in 0..cycles {
                            let session = format!("agent:main:dm:light:s{}", n % 4);
                            progress
                                .done(pid, ws_cycle(port, token, session, i * cycles + n).await);
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    for t in heavy {
        let _ = t.join();
    }
    let loaded = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    let loaded_times = runtime
        .block_on(loaded_probe)
        .map_err(|e| e.to_string())??;
    let after_kib = rss_kib(pid);
    let (after_anon, after_file) = rss_split_kib(pid);
    std::thread::sleep(Duration::from_secs(3));
    let settled_kib = rss_kib(pid);
    let homes = (0..USERS)
        .filter(|i| home.join(format!("users/u{i:02}/sessions")).is_dir())
        .count();
    drop(gw);
    let _ = std::fs::remove_dir_all(&home);

    let (done, failures, last) = progress.counts();
    let (baseline, baseline_anon, halfway) = progress.marks();
    let (idle_p50, idle_p99, idle_n) = summary(idle_times);
    let (load_p50, load_p99, load_n) = summary(loaded_times);
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "LurkBot users — {USERS} users on one gateway: one heavy user ({turns} API turns from {HEAVY_CLIENTS} clients on {HEAVY_SESSIONS} sessions), {} others ({cycles} WebSocket cycles each, {LIGHT_AT_ONCE} at a time), each with their own token",
        USERS - 1
    );
    println!(
        "{done} turns in {:.0} s ({:.0} turns/s), {failures} failed; {homes} users' homes hold sessions",
        loaded.as_secs_f64(),
        done as f64 / loaded.as_secs_f64().max(0.001)
    );
    println!(
        "a light user's health: idle p50 {idle_p50:.2} ms p99 {idle_p99:.2} ms ({idle_n} probes); under the heavy user's load p50 {load_p50:.2} ms p99 {load_p99:.2} ms ({load_n} probes; starved above {STARVED_MS} ms)"
    );
    println!(
        "RSS idle with {USERS} users' states {:.1} MiB; after 100 turns {:.1} MiB; after the run {:.1} MiB (+{:.1} MiB, budget +8 MiB); 3 s later {:.1} MiB",
        mib(idle_kib),
        mib(baseline),
        mib(after_kib),
        mib(after_kib.saturating_sub(baseline)),
        mib(settled_kib)
    );
    println!(
        "halfway {:.1} MiB → end {:.1} MiB; at the end {:.1} MiB anonymous ({:.1} MiB after 100 turns) and {:.1} MiB of the binary's pages",
        mib(halfway),
        mib(after_kib),
        mib(after_anon),
        mib(baseline_anon),
        mib(after_file)
    );
    let mut problems = Vec::new();
    if after_kib.saturating_sub(baseline) > GROWTH_BUDGET_KIB {
        problems.push(format!(
            "RSS grew {:.1} MiB from the 100th turn to the end (budget 8 MiB)",
            mib(after_kib.saturating_sub(baseline))
        ));
    }
    if load_p99 > STARVED_MS {
        problems.push(format!(
            "a light user's health p99 was {load_p99:.1} ms under another user's load (starved above {STARVED_MS} ms)"
        ));
    }
    if homes != USERS {
        problems.push(format!(
            "only {homes} of {USERS} users' homes hold sessions"
        ));
    }
    if failures > 0 {
        problems.push(format!("{failures} turns failed; the last: {last}"));
    }
    if problems.is_empty() {
        println!("users: PASS");
        Ok(())
    } else {
        Err(format!("users FAILED: {}", problems.join("; ")))
    }
}
