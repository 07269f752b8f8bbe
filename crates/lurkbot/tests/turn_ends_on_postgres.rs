//! What a review of PostgreSQL mode found, each as the test that fails without its fix: a
//! turn whose end could not be recorded (PostgreSQL down at that moment: its transcript could
//! not take the answer, so it failed and said so) is written once the database answers — its
//! end, its usage record, its budget hold's release — and a retry with its `Idempotency-Key`
//! gets its own turn's end at once (never a later turn's, never a second model call), through a
//! SIGKILL too;
//! a turn the store cannot record is refused `503` with `Retry-After` on every path; `/ready`
//! names no database; a turn under an agent that does not exist is refused.

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::postgres::Postgres;
use serde_json::json;

use crate::gateways_on_postgres::home_on;
use crate::nothing_lost::{append_config, chat_completion, kill, start_as, until};
use crate::raw_http::http;
use crate::util::Test;

/// `POST /v1/chat/completions` with `headers` (each `Name: value\r\n`).
fn completion(addr: &str, token: &str, headers: &str, message: &str) -> (u16, String, String) {
    let body =
        json!({"model": "lurkbot", "messages": [{"role": "user", "content": message}]}).to_string();
    http(
        addr,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer {token}\r\n{headers}Content-Type: application/json"
        ),
        &body,
    )
}

/// A home on database `db` with a daily token budget (so every call holds a part of it).
fn budgeted_home(pg: &Postgres, db: &str) -> Test {
    let t = home_on(pg, db);
    append_config(&t, "[budgets]\ndaily_tokens = 1000000");
    t
}

/// The state of the turn `key` started, in the database.
fn turn_state(pg: &Postgres, db: &str, key: &str) -> String {
    pg.psql(
        db,
        &format!("SELECT state FROM turns WHERE source = 'api:{key}'"),
    )
}

/// Waits until the database holds the turn of `key` ended (failed: its transcript could not
/// take the answer), one usage record (the model call was made) and no budget hold.
async fn until_recorded(pg: &Postgres, db: &str, key: &str) {
    until("the turn's end recorded", || {
        turn_state(pg, db, key) == "failed"
    })
    .await;
    until("its usage recorded and its hold released", || {
        pg.psql(db, "SELECT count(*) FROM usage") == "1"
            && pg.psql(db, "SELECT count(*) FROM holds") == "0"
    })
    .await;
}

/// The database goes down while the model answers: the turn fails and the client is told; its
/// end is kept;
/// while the database is down a retry and a new turn are refused `503` with `Retry-After` (on
/// both paths) and `/ready` says "state store unreachable" without naming the database; once
/// it is back the end, the usage record and the hold's release are written, and the retry
/// gets its own turn's end at once — one model call in all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_the_database_missed_is_recorded_once_it_answers() {
    let pg = Postgres::start();
    let t = budgeted_home(&pg, "ends");
    let gate = Gate::new();
    let fake = FakeProvider::start(vec![Step::Held(
        gate.clone(),
        Box::new(Step::text("Your own answer.")),
    )])
    .await;
    let gw = start_as(&t, &fake, "gw-a");
    let (addr, token) = (gw.addr.clone(), t.gateway_token());
    let first = {
        let (addr, token) = (addr.clone(), token.clone());
        tokio::task::spawn_blocking(move || chat_completion(&addr, &token, "key-1", "question one"))
    };
    until("the model is asked", || fake.requests().len() == 1).await;
    pg.stop();
    gate.open();
    let (status, body) = first.await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(
        std::fs::read_dir(t.path("state/deferred")).is_ok_and(|mut d| d.next().is_some()),
        "the end is kept on disk while it waits"
    );

    // The database down: refused at once, the same way wherever the refusal comes from.
    let ask = |headers: &'static str| {
        let (addr, token) = (addr.clone(), token.clone());
        move || completion(&addr, &token, headers, "question two")
    };
    for headers in [
        "Idempotency-Key: key-2\r\n",
        "x-lurkbot-session: agent:main:main\r\n",
    ] {
        let (status, head, body) = tokio::task::spawn_blocking(ask(headers)).await.unwrap();
        assert_eq!(status, 503, "{headers}: {body}");
        assert!(head.contains("retry-after:"), "{headers}: {head}");
    }
    let (status, head, body) = {
        let addr = addr.clone();
        tokio::task::spawn_blocking(move || http(&addr, "GET /ready HTTP/1.1", ""))
            .await
            .unwrap()
    };
    assert_eq!(status, 503, "{body}");
    assert!(head.contains("retry-after:"), "{head}");
    assert!(body.contains("state store unreachable"), "{body}");
    for secret in ["lurk", "127.0.0.1", &pg.port().to_string(), "ends"] {
        assert!(!body.contains(secret), "/ready names {secret}: {body}");
    }
    // The details are in the log (written by the gateway's log thread, a moment later).
    until("the reason in the gateway's log", || {
        gw.stderr()
            .contains("not ready: the state store does not answer")
    })
    .await;

    pg.start_again();
    until_recorded(&pg, "ends", "key-1").await;
    let (status, body) = {
        let (addr, token) = (addr.clone(), token.clone());
        tokio::task::spawn_blocking(move || chat_completion(&addr, &token, "key-1", "question one"))
            .await
            .unwrap()
    };
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]["message"].as_str().is_some_and(
            |m| m.contains("this request's turn failed") && m.contains("new Idempotency-Key")
        ),
        "{body}"
    );
    assert_eq!(fake.requests().len(), 1, "the model was asked once");
    drop(gw);
}

/// The same, with the gateway SIGKILLed while the end waits: the next gateway on the home
/// (another id) writes what the dead one kept — the turn's own end, one usage record, no hold
/// — instead of running the turn again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_kept_by_a_killed_gateway_is_recorded_by_the_next() {
    let pg = Postgres::start();
    let t = budgeted_home(&pg, "kept");
    let gate = Gate::new();
    let fake = FakeProvider::start(vec![Step::Held(
        gate.clone(),
        Box::new(Step::text("Kept through a kill.")),
    )])
    .await;
    let gw = start_as(&t, &fake, "gw-a");
    let (addr, token) = (gw.addr.clone(), t.gateway_token());
    let first = {
        let (addr, token) = (addr.clone(), token.clone());
        tokio::task::spawn_blocking(move || chat_completion(&addr, &token, "key-k", "question"))
    };
    until("the model is asked", || fake.requests().len() == 1).await;
    pg.stop();
    gate.open();
    assert_eq!(first.await.unwrap().0, 503);
    kill(gw);
    pg.start_again();

    let next = start_as(&t, &fake, "gw-b");
    until_recorded(&pg, "kept", "key-k").await;
    let (status, body) = {
        let addr = next.addr.clone();
        tokio::task::spawn_blocking(move || chat_completion(&addr, &token, "key-k", "question"))
            .await
            .unwrap()
    };
    assert_eq!(status, 503, "{body}");
    assert_eq!(fake.requests().len(), 1, "the model was asked once");
    assert!(
        std::fs::read_dir(t.path("state/deferred")).is_ok_and(|d| d.count() == 0),
        "the dead gateway's file is gone once written"
    );
    drop(next);
}

/// A session key naming an agent that does not exist is refused (404), on the HTTP API and on
/// the WebSocket's path alike; nothing reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_under_an_agent_that_does_not_exist_is_refused() {
    let pg = Postgres::start();
    let t = home_on(&pg, "agents");
    let fake = FakeProvider::start(vec![Step::text("never")]).await;
    let gw = start_as(&t, &fake, "gw-a");
    let (addr, token) = (gw.addr.clone(), t.gateway_token());
    let (status, _, body) = tokio::task::spawn_blocking(move || {
        completion(
            &addr,
            &token,
            "x-lurkbot-session: agent:ghost-agent:main\r\n",
            "hello",
        )
    })
    .await
    .unwrap();
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no agent 'ghost-agent'"), "{body}");
    let ws = t.run_env(
        &[
            "agent",
            "--gateway",
            &gw.ws,
            "--session",
            "agent:ghost-agent:main",
            "-m",
            "hello",
        ],
        &[("LURKBOT_GATEWAY_TOKEN", &t.gateway_token())],
    );
    assert_ne!(ws.status, 0, "{}", ws.stdout);
    assert!(
        ws.stderr.contains("no agent 'ghost-agent'"),
        "{}",
        ws.stderr
    );
    assert!(fake.requests().is_empty());
    drop(gw);
}
