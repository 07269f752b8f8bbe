//! `bench/run.sh turn` (ARCHITECTURE.md §9): what one API turn costs the gateway itself — one
//! scripted model call, no tool call — as the user + system CPU of the gateway process from
//! `/proc/PID/stat`, over sequential turns after a warm-up (the median of three rounds), on the embedded store and on
//! PostgreSQL (15, loopback, fsync on); and the turns a core could serve at that cost. Budgets
//! 2 ms and 3 ms; the figures of 2026-11-28 (6.2 and 9.1 ms) printed beside them as ratios.

use std::path::Path;

use lurkbot_llm::fake::Step;
use lurkbot_test_support::postgres::Postgres;

use crate::cpu_share::process_cpu;

/// Budget on the embedded store, ms of gateway CPU a turn.
const EMBEDDED_BUDGET_MS: f64 = 2.0;
/// Budget on PostgreSQL.
const POSTGRES_BUDGET_MS: f64 = 3.0;
/// The figures measured on 2026-11-28 (the issue that set the budgets).
const BEFORE_MS: (f64, f64) = (6.2, 9.1);
/// The answer every turn gets (what `soak::api_turn` waits for).
const ANSWER: &str = "Done: the session is fine.";

/// Rounds per store: the machine's own noise moves one round by ±10 %; the median of three
/// is the figure.
const ROUNDS: usize = 3;

/// Gateway CPU (ms) per turn, one figure per round (each a gateway started afresh and four
/// sessions of its own, so every round's sessions grow alike), median first.
fn rounds_ms(bin: &Path, home: &Path, token: &str, turns: usize) -> Result<Vec<f64>, String> {
    let mut all = (0..ROUNDS)
        .map(|round| per_turn_ms(bin, home, token, turns, round))
        .collect::<Result<Vec<f64>, String>>()?;
    all.sort_by(f64::total_cmp);
    let median = all[ROUNDS / 2];
    all.insert(0, median);
    Ok(all)
}

/// Gateway CPU (ms) per turn over `turns` sequential API turns on the gateway of `home`.
fn per_turn_ms(
    bin: &Path,
    home: &Path,
    token: &str,
    turns: usize,
    round: usize,
) -> Result<f64, String> {
    let gw = crate::gateways::start(bin, home, "gw-turn")?;
    let pid = gw.child.id();
    let turn = |n: usize| {
        let session = Some(format!("agent:main:dm:bench:round{round}-{}", n % 4));
        crate::soak::api_turn(gw.port, token, session, n)
    };
    for n in 0..turns / 10 {
        turn(n)?;
    }
    let before = process_cpu(pid);
    for n in 0..turns {
        turn(turns + n)?;
    }
    let after = process_cpu(pid);
    Ok((after - before) * 1000.0 / turns as f64)
}

fn verdict(ms: f64, budget: f64) -> &'static str {
    if ms <= budget { "within" } else { "OVER" }
}

pub(crate) fn turn(bin: &Path, turns: usize) -> Result<(), String> {
    // Every request answered with text (no tool call).
    let (_runtime, fake) = crate::soak::scripted_model_answering(|_| Step::text(ANSWER))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let embedded = dir.path().join("embedded");
    let token = crate::gateways::home_at(bin, &embedded, &fake.url, None)?;
    println!(
        "a gateway's own CPU per API turn (one scripted model call, no tool call), {turns} sequential turns after {} to warm up, user + system time from /proc",
        turns / 10
    );
    let near = rounds_ms(bin, &embedded, &token, turns)?;
    let pg = Postgres::start_synced();
    let url = pg.database("bench");
    let far_home = dir.path().join("postgres");
    let far_token = crate::gateways::home_at(bin, &far_home, &fake.url, Some(&url))?;
    let far = rounds_ms(bin, &far_home, &far_token, turns)?;
    for (place, figures, budget, before) in [
        ("embedded store", near, EMBEDDED_BUDGET_MS, BEFORE_MS.0),
        ("PostgreSQL    ", far, POSTGRES_BUDGET_MS, BEFORE_MS.1),
    ] {
        let ms = figures[0];
        println!(
            "  {place}: {ms:.2} ms a turn, median of {ROUNDS} rounds ({:.2}–{:.2} ms; {:.0} turns/s per core; budget {budget} ms: {}; {:.2}x the {before} ms of 2026-11-28)",
            figures[1],
            figures[ROUNDS],
            1000.0 / ms,
            verdict(ms, budget),
            ms / before
        );
    }
    Ok(())
}
