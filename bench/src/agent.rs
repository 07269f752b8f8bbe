//! `lurkbot-bench agent`: the agent loop's own cost and a long session's memory.
//!
//! - Loop overhead per tool round trip: turns in which the scripted model (the `fake` provider,
//!   in this process, over loopback HTTP) calls `session_status` once (200 turns) or ten times
//!   (20 turns) and then answers. The
//!   very same requests (system prompt, tools, the history as it grew, read back from the
//!   transcript) are then replayed with the bare provider client (`Failover::chat`: the same
//!   HTTP, serialisation and stream parsing, no agent). The difference per tool round trip is
//!   what the loop adds: transcript appends with fsync, session index, prompt and policy, the
//!   tool, wrapping.
//!   Budget: ≤ 1 ms (ARCHITECTURE.md §9). Each is run with the home on the disk and on tmpfs
//!   (`/dev/shm`, where syncs return at once), three times each: the difference between the two
//!   is the disk's sync latency, the durability the loop keeps.
//! - Peak RSS of a 200-turn session: `lurkbot chat` fed 200 lines (every tenth turn calls a
//!   tool), measured from /proc, next to a 1-turn chat to show the growth.
//!
//! The peers' whole turns against the same scripted model are measured by `peers.rs`; here the
//! comparison is against the budget and against the bare provider round trip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use lurkbot_agent::Agent;
use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_llm::{ChatRequest, Failover};
use serde_json::json;

use crate::archive::timed;

/// Budget for the loop overhead per tool round trip.
const OVERHEAD_BUDGET_MS: f64 = 1.0;

pub(crate) fn agent(bin: &Path, turns: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // The same loop with its home on the disk (where the temporary folder is) and in memory
    // (/dev/shm, tmpfs: fdatasync and fsync return at once): the difference is what durability
    // costs on this disk, the rest is the loop's own work. Median of three runs each.
    let places = places();
    for (turns, rounds) in [(turns, 1), ((turns / 10).max(1), 10)] {
        println!(
            "agent loop, {turns} turns × {rounds} tool round trip(s), {} model requests; median per-turn difference, three runs",
            turns * (rounds + 1)
        );
        for (place, dir) in &places {
            let mut per_trips = Vec::new();
            for _ in 0..3 {
                per_trips.push(runtime.block_on(overhead(turns, rounds, dir.as_deref()))?);
            }
            per_trips.sort_by(f64::total_cmp);
            let per_trip = per_trips[1];
            println!(
                "  home on {place:<5}: loop overhead per tool round trip {per_trip:.3} ms (runs {:.3} / {:.3} / {:.3}; budget {OVERHEAD_BUDGET_MS} ms: {})",
                per_trips[0],
                per_trips[1],
                per_trips[2],
                if per_trip <= OVERHEAD_BUDGET_MS {
                    "within"
                } else {
                    "OVER"
                }
            );
        }
    }
    println!(
        "  (durability kept: a tool round trip's results and a turn's final answer are each made\n   durable with fdatasync before the turn goes on, and a turn's counters replace sessions.json\n   with one fsync; on tmpfs these cost nothing, so disk − tmpfs is this disk's sync latency)"
    );
    let (one, long) = runtime.block_on(session_rss(bin))?;
    println!(
        "peak RSS of `lurkbot chat`: 1 turn {:.1} MiB, 200 turns {:.1} MiB",
        one as f64 / 1024.0,
        long as f64 / 1024.0
    );
    Ok(())
}

/// Where a benchmark's home goes: the disk (the temporary folder) and, where there is one,
/// tmpfs (`/dev/shm`, where syncs return at once) — the difference is the disk's sync latency.
pub(crate) fn places() -> Vec<(&'static str, Option<PathBuf>)> {
    std::iter::once(("disk", None))
        .chain(
            Path::new("/dev/shm")
                .is_dir()
                .then(|| ("tmpfs", Some(PathBuf::from("/dev/shm")))),
        )
        .collect()
}

/// The scripted model of a turn with `rounds` tool round trips: `session_status` until the
/// request carries `rounds` tool results after its last user message, then a sentence. The
/// answer depends on the request only, so the agent and the bare replay get the same ones.
pub(crate) fn scripted(
    rounds: usize,
) -> impl Fn(&serde_json::Value) -> Step + Send + Sync + 'static {
    move |body| {
        let messages = body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let results = messages
            .iter()
            .rev()
            .take_while(|m| m["role"] != "user")
            .filter(|m| m["role"] == "tool")
            .count();
        if results < rounds {
            Step::call(&format!("c{results}"), "session_status", json!({}))
        } else {
            Step::text("All fine, nothing to report.")
        }
    }
}

pub(crate) fn failover_for(fake: &FakeProvider) -> Result<Failover, String> {
    let url = format!("{}/v1", fake.url);
    let lookup = move |name: &str| (name == "OPENAI_BASE_URL").then(|| url.clone());
    let model = "openai/bench".parse().map_err(|e| format!("{e}"))?;
    Failover::new(vec![model], &lookup, None).map_err(|e| e.to_string())
}

/// The loop's overhead per tool round trip, ms: each turn is followed at once by the bare
/// provider replaying the very requests that turn sent (system prompt, tools and the history as
/// it grew, read back from the transcript), and the median of the per-turn differences is
/// divided by the round trips (a median, so a scheduling hiccup in one turn does not count).
async fn overhead(turns: usize, rounds: usize, place: Option<&Path>) -> Result<f64, String> {
    let dir = match place {
        Some(place) => tempfile::tempdir_in(place),
        None => tempfile::tempdir(),
    }
    .map_err(|e| e.to_string())?;
    let home = Home::open(dir.path()).map_err(|e| e.to_string())?;
    lurkbot_core::init_home(&home, &[]).map_err(|e| e.to_string())?;
    let fake = FakeProvider::start(Vec::new()).await;
    fake.respond(scripted(rounds));
    let mut agent = Agent::new(home.clone(), Config::default(), failover_for(&fake)?);
    let mut failover = failover_for(&fake)?;
    let key = SessionKey::main();
    // Warm-up turn (connection, files); it also gives the system prompt and the tools.
    agent
        .turn(&key, "status?", &mut |_| {})
        .await
        .map_err(|e| e.to_string())?;
    let system = fake.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    fake.record(false);
    let tools = agent.offered(&key).map_err(|e| e.to_string())?;
    let sessions = lurkbot_agent::Sessions::open(&home, "main");
    let sid = sessions
        .get_or_create(&key)
        .map_err(|e| e.to_string())?
        .session_id;
    let mut differences = Vec::with_capacity(turns);
    for _ in 0..turns {
        let start = Instant::now();
        agent
            .turn(&key, "status?", &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
        let with_agent = start.elapsed();
        // This turn's requests: each ends at its user message or at a tool result.
        let messages = sessions.context(&sid).map_err(|e| e.to_string())?.messages;
        let ends: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role != lurkbot_llm::Role::Assistant)
            .map(|(i, _)| i + 1)
            .collect();
        let ends = &ends[ends.len().saturating_sub(rounds + 1)..];
        let requests: Vec<ChatRequest> = ends
            .iter()
            .map(|&end| ChatRequest {
                model: String::new(),
                system: system.clone(),
                messages: messages[..end].to_vec(),
                tools: tools.clone(),
                max_tokens: 4096,
                reasoning: Some("off".into()),
            })
            .collect();
        let start = Instant::now();
        for request in &requests {
            failover
                .chat(request, &mut |_| {})
                .await
                .map_err(|e| e.to_string())?;
        }
        let bare = start.elapsed();
        differences.push(with_agent.as_secs_f64() - bare.as_secs_f64());
    }
    differences.sort_by(f64::total_cmp);
    let median = differences
        .get(differences.len() / 2)
        .copied()
        .unwrap_or(0.0);
    Ok(median * 1000.0 / rounds as f64)
}

async fn session_rss(bin: &Path) -> Result<(u64, u64), String> {
    let mut peaks = Vec::new();
    for turns in [1usize, 200] {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let home = dir.path().join("home");
        let steps: Vec<Step> = (0..turns)
            .flat_map(|i| {
                let reply = Step::text(&format!("Reply {i}: {}", "lorem ipsum ".repeat(40)));
                if i % 10 == 0 {
                    vec![
                        Step::call(
                            &format!("c{i}"),
                            "terminal_exec",
                            json!({"command": "help"}),
                        ),
                        reply,
                    ]
                } else {
                    vec![reply]
                }
            })
            .collect();
        let fake = FakeProvider::start(steps).await;
        let input: String = (0..turns)
            .map(|i| format!("message number {i}\n"))
            .collect();
        let input_path = dir.path().join("input.txt");
        std::fs::write(&input_path, input).map_err(|e| e.to_string())?;
        let status = Command::new(bin)
            .args(["--home"])
            .arg(&home)
            .arg("init")
            .stdout(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("lurkbot init failed".into());
        }
        let stdin = std::fs::File::open(&input_path).map_err(|e| e.to_string())?;
        let base = format!("{}/v1", fake.url);
        let bin = bin.to_path_buf();
        let (_, peak) = tokio::task::spawn_blocking(move || {
            timed(
                Command::new(&bin)
                    .arg("--home")
                    .arg(&home)
                    .arg("chat")
                    .env("LURKBOT_MODEL", "openai/bench")
                    .env("OPENAI_BASE_URL", base)
                    .stdin(stdin),
            )
        })
        .await
        .map_err(|e| e.to_string())??;
        if fake.remaining() != 0 {
            return Err(format!(
                "the chat stopped early: {} scripted replies unused",
                fake.remaining()
            ));
        }
        peaks.push(peak);
    }
    Ok((peaks[0], peaks[1]))
}
