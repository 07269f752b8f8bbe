//! Several gateway processes sharing one PostgreSQL database (`[state] url`; Debian's
//! PostgreSQL 15 on loopback): one of them runs the cron jobs — the holder of the lease
//! `scheduler` — and when it is killed another takes the schedule over well within 15 s,
//! each scheduled time run once.

use std::time::Instant;

use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_test_support::postgres::Postgres;

use crate::nothing_lost::{kill, until};
use crate::util::{Running, Test, start_gateway};

/// A home whose state is in database `name` of `pg`.
pub(crate) fn home_on(pg: &Postgres, name: &str) -> Test {
    let url = pg.database(name);
    let t = Test::init();
    let config = t.path("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[state]\nurl = \"{url}\"\n"));
    std::fs::write(&config, text).unwrap();
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_gateways_run_a_cron_job_once_per_time_and_another_takes_over_the_schedule() {
    let pg = Postgres::start();
    let t = home_on(&pg, "cron");
    let fake =
        FakeProvider::start((0..200).map(|i| Step::text(&format!("tick {i}"))).collect()).await;
    fake.record(true);
    let base = format!("{}/v1", fake.url);
    let added = t.run(&[
        "cron",
        "add",
        "--name",
        "tick",
        "--every",
        "2s",
        "--message",
        "tick",
    ]);
    assert_eq!(added.status, 0, "{}", added.stderr);

    let mut gateways: Vec<(String, Option<Running>)> = (1..=3)
        .map(|i| {
            let id = format!("gw-{i}");
            let env = [
                ("LURKBOT_MODEL", "openai/fake"),
                ("OPENAI_BASE_URL", base.as_str()),
                ("LURKBOT_GATEWAY_ID", id.as_str()),
            ];
            let running = start_gateway(&t, &env);
            (id, Some(running))
        })
        .collect();
    let holder = || pg.psql("cron", "SELECT owner FROM leases WHERE name = 'scheduler'");
    let runs = || -> usize {
        pg.psql(
            "cron",
            "SELECT count(*) FROM turns WHERE source LIKE 'cron:%'",
        )
        .parse()
        .unwrap()
    };
    until("a gateway runs the schedule", || !holder().is_empty()).await;
    until("two runs", || runs() >= 2).await;
    let first = holder();

    // The scheduler's gateway dies; another takes the lease and the job runs on.
    let index = gateways.iter().position(|(id, _)| *id == first).unwrap();
    kill(gateways[index].1.take().unwrap());
    let killed_at = Instant::now();
    let before = runs();
    until("another gateway holds the schedule", || {
        let now = holder();
        !now.is_empty() && now != first
    })
    .await;
    until("the job runs on", || runs() >= before + 2).await;
    assert!(
        killed_at.elapsed().as_secs() < 15,
        "failover took {:?}",
        killed_at.elapsed()
    );
    let second = holder();
    for (id, running) in &mut gateways {
        if let Some(running) = running.take() {
            let (status, stderr) = running.stop();
            assert_eq!(status, 0, "{id}: {stderr}");
            if *id != second {
                assert!(
                    stderr.contains("another gateway runs the cron jobs"),
                    "{id} stood by: {stderr}"
                );
            }
        }
    }

    // Each scheduled time ran once: one turn per time (its source names it), every turn
    // ended, and one model call each — the kill may have cut one, asked again on resume.
    let turns = runs();
    let distinct: usize = pg
        .psql(
            "cron",
            "SELECT count(DISTINCT source) FROM turns WHERE source LIKE 'cron:%'",
        )
        .parse()
        .unwrap();
    assert_eq!(distinct, turns);
    let unended = pg.psql("cron", "SELECT count(*) FROM turns WHERE state <> 'done'");
    assert_eq!(unended, "0");
    let calls = fake.requests().len();
    assert!(
        calls == turns || calls == turns + 1,
        "{calls} model calls for {turns} runs"
    );
}
