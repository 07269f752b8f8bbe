//! Several gateway processes sharing one PostgreSQL database (`[state] url`; Debian's
//! PostgreSQL 15 on loopback): one of them runs the cron jobs — the holder of the lease
//! `scheduler` — and when it is killed another takes the schedule over well within 15 s,
//! each scheduled time run once; the Telegram poller's gateway killed mid-turn, another takes
//! the poll and the turn; `state migrate` there and back.

const BOT_TOKEN: &str = "123456:on-postgres";

use std::time::{Duration, Instant};

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::postgres::Postgres;
use lurkbot_test_support::telegram_server::TelegramServer;
use serde_json::json;

use crate::nothing_lost::{append_config, kill, start_as, until, with_telegram};
use crate::util::{Running, Test};

/// A home whose state is in database `name` of `pg`.
pub(crate) fn home_on(pg: &Postgres, name: &str) -> Test {
    let url = pg.database(name);
    let t = Test::init();
    append_config(&t, &format!("[state]\nurl = \"{url}\""));
    t
}

/// The holder of lease `name` in database `db`, if any.
fn holder_of(pg: &Postgres, db: &str, name: &str) -> String {
    pg.psql(
        db,
        &format!("SELECT owner FROM leases WHERE name = '{name}'"),
    )
}

/// Two gateways on PostgreSQL with Telegram: the one polling is killed during a message's
/// model call; the other takes the poll and the turn over within 15 s, answers that message
/// once and the next one too — never two pollers at once (Telegram's 409), nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_telegram_pollers_gateway_killed_another_takes_the_poll_and_its_turn() {
    let pg = Postgres::start();
    let t = home_on(&pg, "poll");
    let telegram = TelegramServer::start(BOT_TOKEN);
    with_telegram(&t, &telegram, BOT_TOKEN);
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Answered after the takeover."),
        Step::text("And the next one."),
    ])
    .await;
    fake.record(true);
    let first = start_as(&t, &fake, "gw-poller");
    until("the first polls", || {
        holder_of(&pg, "poll", "channel:telegram") == "gw-poller"
    })
    .await;
    let second = start_as(&t, &fake, "gw-standby");
    until("the second stands by", || {
        second.stderr().contains("standing by")
    })
    .await;
    telegram.user_writes(42, 42, "ada", "private", "who answers?");
    until("the model call", || fake.requests().len() == 1).await;
    assert_eq!(telegram.conflicts(), 0, "one poller while both live");

    kill(first);
    let killed_at = Instant::now();
    let sent = telegram.wait_sent(1, Duration::from_secs(30));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "Answered after the takeover\\.");
    assert!(
        killed_at.elapsed() < Duration::from_secs(15),
        "{:?}",
        killed_at.elapsed()
    );
    until("the second polls", || {
        holder_of(&pg, "poll", "channel:telegram") == "gw-standby"
    })
    .await;
    telegram.user_writes(42, 42, "ada", "private", "and now?");
    let sent = telegram.wait_sent(2, Duration::from_secs(30));
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].text, "And the next one\\.");
    let (status, stderr) = tokio::task::spawn_blocking(move || second.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        telegram.sent().len(),
        2,
        "nothing twice: {:?}",
        telegram.sent()
    );
    // The dead poller's last wait may still be open at Telegram: its successor's first poll
    // ends it (a 409 nobody reads). Never more.
    assert!(telegram.conflicts() <= 1, "{}", telegram.conflicts());
    assert_eq!(fake.requests().len(), 3, "one call cut, two that answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_gateways_run_a_cron_job_once_per_time_and_another_takes_over_the_schedule() {
    let pg = Postgres::start();
    let t = home_on(&pg, "cron");
    let fake =
        FakeProvider::start((0..200).map(|i| Step::text(&format!("tick {i}"))).collect()).await;
    fake.record(true);
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
            let running = start_as(&t, &fake, &id);
            (id, Some(running))
        })
        .collect();
    let holder = || holder_of(&pg, "cron", "scheduler");
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
    // The job and its runs are in the database, not the home's files; the CLI reads them there.
    assert!(!t.path("cron/jobs.json").exists());
    assert_eq!(
        pg.psql(
            "cron",
            "SELECT count(*) FROM documents WHERE name = 'cron/jobs.json'"
        ),
        "1"
    );
    let id = added
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("cron_"));
    let id = id.unwrap_or_else(|| panic!("no id in {}", added.stdout));
    let listed = t.run(&["cron", "runs", id, "--json"]);
    assert_eq!(listed.status, 0, "{}", listed.stderr);
    let logged = listed.json().as_array().map_or(0, Vec::len);
    assert!(
        logged >= turns.saturating_sub(1) && logged > 0,
        "{logged} runs logged for {turns}"
    );
    let calls = fake.requests().len();
    assert!(
        calls == turns || calls == turns + 1,
        "{calls} model calls for {turns} runs"
    );
}

/// `state migrate` moves a populated home's state to PostgreSQL and back: the same turns
/// (replies, journal steps, sources), inbound records and outbox, counted on both sides; a
/// password on the command line, a running gateway and a non-empty target are refused.
#[test]
fn state_migrate_moves_a_homes_state_to_postgres_and_back() {
    use lurkbot_state::{NewOutgoing, NewTurn, Store};
    let pg = Postgres::start();
    let url = pg.database("moved");
    let t = Test::init();
    let nothing = t.run(&["state", "migrate", "--to", &url]);
    assert_eq!(nothing.status, 2, "{}", nothing.stderr);
    assert!(
        nothing.stderr.contains("nothing to migrate"),
        "{}",
        nothing.stderr
    );
    let home = lurkbot_core::Home::open(&t.path("")).unwrap();
    {
        let store = Store::open(&home).unwrap();
        for i in 0..5 {
            let id = format!("run_{i}");
            let source = format!("telegram:42:{i}");
            store
                .receive(&source, "telegram", &serde_json::json!({"text": i}))
                .unwrap();
            store
                .admit(&NewTurn {
                    id: id.clone(),
                    source: Some(source),
                    session: "agent:main:main".into(),
                    origin: serde_json::json!({"chat": "42"}),
                    message: format!("question {i}"),
                    options: serde_json::json!({}),
                })
                .unwrap();
            store.begin(&id).unwrap();
            store.set_step(&id, 1, None).unwrap();
            if i < 4 {
                let reply = NewOutgoing {
                    channel: "telegram".into(),
                    chat: "42".into(),
                    reply_to: Some(i.to_string()),
                    kind: "text".into(),
                    body: format!("answer {i}"),
                };
                store
                    .finish(&id, Ok(&format!("answer {i}")), &[reply])
                    .unwrap();
            }
        }
        store
            .receive("telegram:42:99", "telegram", &serde_json::json!({}))
            .unwrap();
        store.release_leases().unwrap();
    }
    // Three model calls' usage, over two months.
    let zone = lurkbot_core::Zone::utc();
    let usage: Vec<lurkbot_agent::usage::UsageRecord> =
        [1_790_000_000_000u64, 1_795_000_000_000, 1_795_000_100_000]
            .iter()
            .enumerate()
            .map(|(i, ts)| lurkbot_agent::usage::UsageRecord {
                ts: *ts,
                agent: "main".into(),
                session_key: "agent:main:main".into(),
                model: "openai/fake".into(),
                input_tokens: 100 * (i as u64 + 1),
                output_tokens: 7,
                cached_input_tokens: None,
                cost_usd: Some(0.25),
                estimated: false,
            })
            .collect();
    for record in &usage {
        lurkbot_agent::usage::append(&home, &zone, record).unwrap();
    }
    // A session with its transcript, and a user.
    let sessions = lurkbot_agent::Sessions::open(&home, "main");
    let session = sessions
        .get_or_create(&lurkbot_core::SessionKey::main())
        .unwrap();
    let said = [
        lurkbot_agent::Entry::message(lurkbot_llm::Message::user("Where is the dentist?")),
        lurkbot_agent::Entry::message(lurkbot_llm::Message::assistant(
            "On Main Street.",
            Vec::new(),
        )),
    ];
    sessions.append(&session.session_id, &said).unwrap();
    assert_eq!(t.run(&["users", "add", "alice"]).status, 0);
    let users_before = std::fs::read_to_string(t.path("users/users.json")).unwrap();
    // A cron job and a run of it.
    let added = t.run(&[
        "cron",
        "add",
        "--name",
        "daily",
        "--every",
        "1d",
        "--message",
        "hi",
    ]);
    assert_eq!(added.status, 0, "{}", added.stderr);
    let jobs_before = std::fs::read_to_string(t.path("cron/jobs.json")).unwrap();
    let job_id = added.stdout.split_whitespace().nth(1).unwrap().to_string();
    let run_line =
        "{\"ts\":1795000000000,\"status\":\"ok\",\"durationMs\":5,\"sessionKey\":\"cron:x\"}";
    std::fs::create_dir_all(t.path("cron/runs")).unwrap();
    std::fs::write(
        t.path(&format!("cron/runs/{job_id}.jsonl")),
        format!("{run_line}\n"),
    )
    .unwrap();

    // The password never on the command line.
    let with_password = url.replace("lurk@", "lurk:pw-on-argv@");
    let refused = t.run(&["state", "migrate", "--to", &with_password]);
    assert_eq!(refused.status, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("LURKBOT_STATE_PASSWORD"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("pw-on-argv"), "{}", refused.stderr);
    let same = t.run(&["state", "migrate", "--to", "home"]);
    assert_eq!(same.status, 2, "{}", same.stderr);

    // While a gateway runs on the state, nothing moves.
    let running = crate::util::start_gateway(&t, &[("LURKBOT_GATEWAY_ID", "busy")]);
    let busy = t.run(&["state", "migrate", "--to", &url]);
    assert_ne!(busy.status, 0);
    assert!(
        busy.stderr
            .contains("a gateway still runs on this state (busy)"),
        "{}",
        busy.stderr
    );
    let (status, stderr) = running.stop();
    assert_eq!(status, 0, "{stderr}");
    // (It ended the unended turn at its start: no model is configured.)
    let records: Vec<_> = {
        let store = Store::open(&home).unwrap();
        (0..5)
            .map(|i| store.turn(&format!("run_{i}")).unwrap().unwrap())
            .collect()
    };

    let moved = t.run(&["state", "migrate", "--to", &url, "--json"]);
    assert_eq!(moved.status, 0, "{}", moved.stderr);
    let moved = moved.json();
    assert_eq!(
        (
            &moved["turns"],
            &moved["inbound"],
            &moved["outbox"],
            &moved["usage"]
        ),
        (
            &serde_json::json!(5),
            &serde_json::json!(6),
            &serde_json::json!(4),
            &serde_json::json!(3)
        )
    );
    assert_eq!(
        (&moved["documents"], &moved["logLines"]),
        (&serde_json::json!(3), &serde_json::json!(3)),
        "the cron job, the users, the session index; a cron run and two transcript lines"
    );
    assert_eq!(pg.psql("moved", "SELECT count(*) FROM log_lines"), "3");
    assert_eq!(pg.psql("moved", "SELECT count(*) FROM turns"), "5");
    assert_eq!(pg.psql("moved", "SELECT count(*) FROM usage"), "3");
    let again = t.run(&["state", "migrate", "--to", &url]);
    assert_ne!(again.status, 0, "a target that holds state is refused");
    assert!(
        again.stderr.contains("already holds state"),
        "{}",
        again.stderr
    );

    // Pointed at the database, the home's own store moved aside: back into the home.
    let config = t.path("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[state]\nurl = \"{url}\"\n"));
    std::fs::write(&config, text).unwrap();
    let status = t.run(&["state", "status", "--json"]).json();
    assert_eq!(status["backend"], "postgres", "{status}");
    let same = t.run(&["state", "migrate", "--to", &url]);
    assert_eq!(same.status, 2, "{}", same.stderr);
    assert!(same.stderr.contains("already"), "{}", same.stderr);
    assert_eq!(status["turns"]["done"], 4, "{status}");
    // `lurkbot usage` reads the records in the database now (the home's files set aside).
    std::fs::rename(t.path("usage"), t.path("usage-before")).unwrap();
    let summed = t.run(&["usage", "--since", "2026-01-01", "--json"]);
    assert_eq!(summed.status, 0, "{}", summed.stderr);
    assert!(
        summed.stdout.contains("\"inputTokens\": 500"),
        "the two records of November: {}",
        summed.stdout
    );
    // The cron jobs are read there too.
    let listed = t.run(&["cron", "list", "--json"]);
    assert!(listed.stdout.contains(&job_id), "{}", listed.stdout);
    let refused = t.run(&["state", "migrate", "--to", "home"]);
    assert_ne!(refused.status, 0);
    assert!(
        refused
            .stderr
            .contains("the home already has cron/jobs.json"),
        "{}",
        refused.stderr
    );
    for moved_aside in ["cron", "users", "sessions"] {
        std::fs::rename(
            t.path(moved_aside),
            t.path(&format!("{moved_aside}-before")),
        )
        .unwrap();
    }
    for name in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"] {
        let _ = std::fs::rename(
            t.path(&format!("state/{name}")),
            t.path(&format!("state/before-{name}")),
        );
    }
    let back = t.run(&["state", "migrate", "--to", "home"]);
    assert_eq!(back.status, 0, "{}", back.stderr);
    assert!(
        back.stdout
            .contains("moved 5 turns, 6 inbound records, 4 outbox messages, 3 usage records, 3 documents and 3 log lines"),
        "{}",
        back.stdout
    );
    let since = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
    assert_eq!(
        lurkbot_agent::usage::read_since(&home, &zone, since),
        usage,
        "the same records, in their month files again"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("cron/jobs.json")).unwrap(),
        jobs_before
    );
    assert_eq!(
        std::fs::read_to_string(t.path("users/users.json")).unwrap(),
        users_before
    );
    let sessions = lurkbot_agent::Sessions::open(&home, "main");
    assert_eq!(
        sessions.list().unwrap()["agent:main:main"].session_id,
        session.session_id
    );
    assert_eq!(sessions.history(&session.session_id).unwrap(), said);
    assert_eq!(
        std::fs::read_to_string(t.path(&format!("cron/runs/{job_id}.jsonl"))).unwrap(),
        format!("{run_line}\n")
    );
    let store = Store::open(&home).unwrap();
    for before in &records {
        let after = store.turn(&before.id).unwrap().unwrap();
        assert_eq!(&after, before);
    }
    assert_eq!(store.unhandled("telegram").unwrap().len(), 1);
    let pending: Vec<String> = store
        .outbox(&[lurkbot_state::OutgoingState::Pending], 10)
        .unwrap()
        .into_iter()
        .map(|o| o.body)
        .collect();
    assert_eq!(
        pending,
        ["answer 0", "answer 1", "answer 2", "answer 3"],
        "in order"
    );
}

/// A client connected to one gateway sees the events of a turn another gateway runs
/// (`LISTEN/NOTIFY` through the database), once each: its `agent` start and its final `chat`;
/// its session and history read the same through either gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_one_gateway_sees_the_turn_another_runs() {
    let pg = Postgres::start();
    let t = home_on(&pg, "events");
    let fake = FakeProvider::start(vec![Step::text("Answered on A.")]).await;
    fake.record(true);
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");
    let token = t.gateway_token();
    let mut on_b = crate::nodes::client(&b.ws, &token).await;
    let asked = {
        let (addr, token) = (a.addr.clone(), token.clone());
        std::thread::spawn(move || {
            crate::nothing_lost::chat_completion(&addr, &token, "k-events", "who runs me?")
        })
    };
    let mut seen = Vec::new();
    let last = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let frame = on_b.frame().await;
            assert!(!frame.is_null(), "the connection to B closed");
            let done = frame["event"] == "chat" && frame["payload"]["state"] == "final";
            seen.push(frame.clone());
            if done {
                return frame;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no final chat event on B; saw {seen:?}"));
    assert_eq!(last["payload"]["text"], "Answered on A.", "{last}");
    let run = last["payload"]["runId"].clone();
    let finals = seen
        .iter()
        .filter(|f| f["event"] == "chat" && f["payload"]["state"] == "final")
        .count();
    assert_eq!(finals, 1, "{seen:?}");
    assert!(
        seen.iter()
            .any(|f| f["event"] == "agent" && f["payload"]["runId"] == run),
        "the run's agent events too: {seen:?}"
    );
    let (code, body) = tokio::task::spawn_blocking(move || asked.join().unwrap())
        .await
        .unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(fake.requests().len(), 1, "one turn, run on A");
    // Its session and history read the same through B.
    let session = last["payload"]["sessionKey"].as_str().unwrap().to_string();
    let listed = on_b.call("sessions.list", json!({}), &mut Vec::new()).await;
    assert!(listed.to_string().contains(&session), "{listed}");
    let history = on_b
        .call(
            "chat.history",
            json!({"sessionKey": session}),
            &mut Vec::new(),
        )
        .await;
    assert!(history.to_string().contains("Answered on A."), "{history}");
    let status = on_b.call("status", json!({}), &mut Vec::new()).await;
    assert_eq!(status["payload"]["sharedEvents"]["on"], true, "{status}");
    drop(a);
    drop(b);
}

/// One turn at a time per session across gateways: while A runs a turn on a session, B
/// refuses another on it, naming A (the lease `session:<key>`); once A's ends, B runs one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_runs_one_turn_at_a_time_across_gateways() {
    use crate::nothing_lost::chat_completion;
    let pg = Postgres::start();
    let t = home_on(&pg, "session");
    let gate = Gate::new();
    let fake = FakeProvider::start(vec![
        Step::Held(gate.clone(), Box::new(Step::text("First, on A."))),
        Step::text("Second, on B."),
    ])
    .await;
    fake.record(true);
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");
    let token = t.gateway_token();
    let on_a = {
        let (addr, token) = (a.addr.clone(), token.clone());
        std::thread::spawn(move || chat_completion(&addr, &token, "k-a", "first"))
    };
    until("A's model call", || fake.requests().len() == 1).await;
    let ask_b = |key: &'static str| {
        let (addr, token) = (b.addr.clone(), token.clone());
        tokio::task::spawn_blocking(move || chat_completion(&addr, &token, key, "second"))
    };
    let (code, body) = ask_b("k-b").await.unwrap();
    assert_ne!(code, 200, "{body}");
    assert!(
        body.to_string().contains("on gateway gw-a"),
        "{code} {body}"
    );
    assert_eq!(fake.requests().len(), 1, "no second turn on the session");

    gate.open();
    let (code, body) = tokio::task::spawn_blocking(move || on_a.join().unwrap())
        .await
        .unwrap();
    assert_eq!(
        (code, &body["choices"][0]["message"]["content"]),
        (200, &json!("First, on A."))
    );
    let (code, body) = ask_b("k-b2").await.unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Second, on B.");
}
