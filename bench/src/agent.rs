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
//!   Budget: ≤ 1 ms (ARCHITECTURE.md §9).
//! - Peak RSS of a 200-turn session: `lurkbot chat` fed 200 lines (every tenth turn calls a
//!   tool), measured from /proc, next to a 1-turn chat to show the growth.
//!
//! No agent peer (OpenClaw, ZeroClaw) can be run against a scripted provider here, so the
//! comparison is against the budget and against the bare provider round trip.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lurkbot_agent::Agent;
use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_llm::{ChatRequest, Failover};
use serde_json::json;

use crate::archive::timed;
use crate::startup::ms;

/// Budget for the loop overhead per tool round trip.
const OVERHEAD_BUDGET_MS: f64 = 1.0;

pub(crate) fn agent(bin: &Path, turns: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    for (turns, rounds) in [(turns, 1), ((turns / 10).max(1), 10)] {
        let (with_agent, bare) = runtime.block_on(overhead(turns, rounds))?;
        let trips = (turns * rounds) as f64;
        let per_trip = (with_agent.as_secs_f64() - bare.as_secs_f64()) * 1000.0 / trips;
        println!(
            "agent loop, {turns} turns × {rounds} tool round trip(s), {} model requests",
            turns * (rounds + 1)
        );
        println!(
            "  whole turns {:>9.2} ms   the same requests, bare provider {:>9.2} ms",
            ms(with_agent),
            ms(bare)
        );
        println!(
            "  loop overhead per tool round trip: {per_trip:.3} ms (budget {OVERHEAD_BUDGET_MS} ms: {})",
            if per_trip <= OVERHEAD_BUDGET_MS {
                "within"
            } else {
                "OVER"
            }
        );
    }
    println!(
        "  (each tool step is made durable with fdatasync, ~0.2-0.3 ms on this disk; a turn also\n   rewrites sessions.json atomically: these fixed per-turn costs weigh most at one round trip)"
    );
    let (one, long) = runtime.block_on(session_rss(bin))?;
    println!(
        "peak RSS of `lurkbot chat`: 1 turn {:.1} MiB, 200 turns {:.1} MiB",
        one as f64 / 1024.0,
        long as f64 / 1024.0
    );
    Ok(())
}

fn turn_steps(turns: usize, rounds: usize) -> Vec<Step> {
    (0..turns)
        .flat_map(|i| {
            (0..rounds)
                .map(move |r| Step::call(&format!("c{i}_{r}"), "session_status", json!({})))
                .chain(std::iter::once(Step::text("All fine, nothing to report.")))
        })
        .collect()
}

fn failover_for(fake: &FakeProvider) -> Result<Failover, String> {
    let url = format!("{}/v1", fake.url);
    let lookup = move |name: &str| (name == "OPENAI_BASE_URL").then(|| url.clone());
    let model = "openai/bench".parse().map_err(|e| format!("{e}"))?;
    Failover::new(vec![model], &lookup, None).map_err(|e| e.to_string())
}

async fn overhead(turns: usize, rounds: usize) -> Result<(Duration, Duration), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let home = Home::open(dir.path()).map_err(|e| e.to_string())?;
    lurkbot_core::init_home(&home, &[]).map_err(|e| e.to_string())?;
    let fake = FakeProvider::start(turn_steps(turns + 1, rounds)).await;
    let mut agent = Agent::new(home.clone(), Config::default(), failover_for(&fake)?);
    let key = SessionKey::main();
    // Warm-up turn (connection, files).
    agent
        .turn(&key, "status?", &mut |_| {})
        .await
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    for _ in 0..turns {
        agent
            .turn(&key, "status?", &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
    }
    let with_agent = start.elapsed();

    // The same exchanges with the bare provider client: the very requests the agent sent
    // (system prompt, tools and the growing history, read back from the transcript), so the
    // difference is only what the loop itself does.
    let sessions = lurkbot_agent::Sessions::open(&home, "main");
    let sid = sessions
        .get_or_create(&key)
        .map_err(|e| e.to_string())?
        .session_id;
    let messages = sessions.context(&sid).map_err(|e| e.to_string())?.messages;
    let system = fake.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let tools = agent.offered(&key).map_err(|e| e.to_string())?;
    // Each request ends at a user message (first step) or a tool result (second step).
    let ends: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role != lurkbot_llm::Role::Assistant)
        .map(|(i, _)| i + 1)
        .skip(rounds + 1)
        .collect();
    fake.push(turn_steps(turns + 1, rounds));
    let mut failover = failover_for(&fake)?;
    let request = |end: usize| ChatRequest {
        model: String::new(),
        system: system.clone(),
        messages: messages[..end].to_vec(),
        tools: tools.clone(),
        max_tokens: 4096,
        reasoning: Some("off".into()),
    };
    failover
        .chat(&request(ends[0]), &mut |_| {})
        .await
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    for &end in &ends {
        failover
            .chat(&request(end), &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok((with_agent, start.elapsed()))
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
