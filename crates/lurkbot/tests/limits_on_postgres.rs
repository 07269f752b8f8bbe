//! Limits across gateways sharing one PostgreSQL database (Debian's 15 on loopback): a
//! budget and the sign-in limit are checked in one transaction with what every gateway holds,
//! so calls or attempts spread over three gateways at once never pass them together.

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::postgres::Postgres;

use crate::gateways_on_postgres::home_on;
use crate::nothing_lost::{kill, start_as, until};

/// A home on database `db` of `pg` with users on and alice signing in with "alice's long
/// password".
fn home_with_alice(pg: &Postgres, db: &str) -> crate::util::Test {
    let t = home_on(pg, db);
    assert_eq!(t.run(&["config", "set", "users.enabled", "true"]).status, 0);
    assert_eq!(t.run(&["users", "add", "alice"]).status, 0);
    let set = t.run_stdin(
        &["users", "passwd", "alice"],
        Some("alice's long password\n"),
    );
    assert_eq!(set.status, 0, "{}", set.stderr);
    t
}

/// A budget over three gateways: 20 calls at once, spread over them, each estimated at E
/// tokens under a daily cap of 3.5 E — exactly three reach the model, the other 17 are refused
/// naming the cap (each gateway alone would let three through: fails without the holds in the
/// database).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_calls_over_three_gateways_never_pass_the_budget() {
    use crate::nothing_lost::chat_completion_in;
    let pg = Postgres::start();
    let t = home_on(&pg, "budget");
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let with_cap = |cap: u64| {
        std::fs::write(
            t.path("config.toml"),
            format!("{config}\n[budgets]\ndaily_tokens = {cap}\n"),
        )
        .unwrap();
    };
    let gate = Gate::new();
    let steps = (0..20)
        .map(|_| Step::Held(gate.clone(), Box::new(Step::text("Within the budget."))))
        .collect();
    let fake = FakeProvider::start(steps).await;
    fake.record(true);
    let token = t.gateway_token();
    let ask = move |addr: String, i: usize| {
        let token = token.clone();
        move || {
            let (key, session) = (format!("k{i:02}"), format!("agent:main:dm:api:p{i:02}"));
            chat_completion_in(&addr, &token, &key, &session, "How much may I spend?")
        }
    };

    // A call's estimate, read from a refusal (a refused call spends nothing).
    with_cap(1);
    let probe = start_as(&t, &fake, "gw-probe");
    let (code, body) = tokio::task::spawn_blocking(ask(probe.addr.clone(), 99))
        .await
        .unwrap();
    kill(probe);
    let text = body.to_string();
    assert_ne!(code, 200, "{text}");
    let needed: u64 = text
        .split("needs about ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no estimate in {text}"));
    assert!(needed > 100, "{text}");
    assert!(fake.requests().is_empty());

    with_cap(needed * 3 + needed / 2);
    let gateways = [
        start_as(&t, &fake, "gw-a"),
        start_as(&t, &fake, "gw-b"),
        start_as(&t, &fake, "gw-c"),
    ];
    let (done, answers) = std::sync::mpsc::channel();
    for i in 0..20 {
        let (call, done) = (ask(gateways[i % 3].addr.clone(), i), done.clone());
        std::thread::spawn(move || done.send(call()));
    }
    let mut refused = Vec::new();
    until("every call refused or at the model", || {
        refused.extend(answers.try_iter());
        refused.len() + fake.requests().len() >= 20
    })
    .await;
    assert_eq!(fake.requests().len(), 3, "{refused:?}");
    for (code, body) in &refused {
        assert_ne!(*code, 200, "{body}");
        assert!(
            body.to_string()
                .contains("BudgetExceeded: budgets.daily_tokens"),
            "{body}"
        );
    }
    gate.open();
    let answered: Vec<(u16, serde_json::Value)> =
        tokio::task::spawn_blocking(move || (0..3).map(|_| answers.recv().unwrap()).collect())
            .await
            .unwrap();
    for (code, body) in answered {
        assert_eq!(code, 200, "{body}");
        assert_eq!(
            body["choices"][0]["message"]["content"],
            "Within the budget."
        );
    }
    // Their usage is in the database, where every gateway counts it; none in the home's files.
    assert_eq!(pg.psql("budget", "SELECT count(*) FROM usage"), "3");
    assert!(!t.path("usage").exists());
    let summed = t.run(&["usage", "--json"]);
    assert_eq!(summed.status, 0, "{}", summed.stderr);
    assert!(summed.stdout.contains("\"calls\": 3"), "{}", summed.stdout);
    drop(gateways);
}

/// `POST /auth/login` on `addr`: the status.
fn sign_in(addr: &str, user: &str, password: &str) -> u16 {
    use std::io::{Read, Write};
    let body = serde_json::json!({"user": user, "password": password}).to_string();
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let sent = write!(
        stream,
        "POST /auth/login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut response = String::new();
    if sent.is_err() || stream.read_to_string(&mut response).is_err() {
        return 0;
    }
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// 20 wrong sign-ins for one name at once, spread over three gateways: five are checked (401),
/// the other 15 refused (429), and then the right password is refused on every gateway for the
/// rest of the minute (each gateway alone would check five: fails without the attempts counted
/// in the database).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_wrong_sign_ins_over_three_gateways_check_five() {
    let pg = Postgres::start();
    let t = home_with_alice(&pg, "sign_in");
    let fake = FakeProvider::start(vec![]).await;
    let gateways = [
        start_as(&t, &fake, "gw-a"),
        start_as(&t, &fake, "gw-b"),
        start_as(&t, &fake, "gw-c"),
    ];
    let start = std::sync::Arc::new(std::sync::Barrier::new(20));
    let tries: Vec<_> = (0..20)
        .map(|i| {
            let (addr, start) = (gateways[i % 3].addr.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                sign_in(&addr, "alice", "a wrong password")
            })
        })
        .collect();
    let mut codes: Vec<u16> =
        tokio::task::spawn_blocking(move || tries.into_iter().map(|t| t.join().unwrap()).collect())
            .await
            .unwrap();
    codes.sort_unstable();
    let checked = codes.iter().filter(|c| **c == 401).count();
    let refused = codes.iter().filter(|c| **c == 429).count();
    assert_eq!((checked, refused), (5, 15), "{codes:?}");
    for gw in &gateways {
        let addr = gw.addr.clone();
        let code =
            tokio::task::spawn_blocking(move || sign_in(&addr, "alice", "alice's long password"))
                .await
                .unwrap();
        assert_eq!(code, 429, "on {}", gw.addr);
    }
    drop(gateways);
}

/// A shared gateway's combined caps over three gateways: alice and bob, each in their own
/// schema, make 20 calls at once spread over three gateways under `[users.total_budgets]` of
/// 3.5 calls — exactly three reach the model, the other 17 are refused naming the combined cap
/// (each gateway alone would let three through: fails without every home's records and holds
/// read in the hold's transaction).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_calling_over_three_gateways_never_pass_the_combined_cap() {
    use crate::nothing_lost::chat_completion_in;
    let pg = Postgres::start();
    let t = home_on(&pg, "together");
    assert_eq!(t.run(&["config", "set", "users.enabled", "true"]).status, 0);
    let mut tokens = Vec::new();
    for name in ["alice", "bob"] {
        let added = t.run(&["users", "add", name]);
        assert_eq!(added.status, 0, "{}", added.stderr);
        tokens.push(added.stdout.trim().to_string());
    }
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let with_cap = |cap: u64| {
        std::fs::write(
            t.path("config.toml"),
            format!("{config}\n[users.total_budgets]\ndaily_tokens = {cap}\n"),
        )
        .unwrap();
    };
    let gate = Gate::new();
    let steps = (0..20)
        .map(|_| Step::Held(gate.clone(), Box::new(Step::text("Within the budget."))))
        .collect();
    let fake = FakeProvider::start(steps).await;
    fake.record(true);
    let ask = |addr: String, token: String, i: usize| {
        move || {
            let (key, session) = (format!("k{i:02}"), format!("agent:main:dm:api:p{i:02}"));
            chat_completion_in(&addr, &token, &key, &session, "How much may we spend?")
        }
    };

    // A call's estimate, read from a refusal (a refused call spends nothing).
    with_cap(1);
    let probe = start_as(&t, &fake, "gw-probe");
    let mut needed = 0;
    for token in &tokens {
        let (code, body) = tokio::task::spawn_blocking(ask(probe.addr.clone(), token.clone(), 99))
            .await
            .unwrap();
        let text = body.to_string();
        assert_ne!(code, 200, "{text}");
        assert!(
            text.contains("BudgetExceeded: users.total_budgets.daily_tokens"),
            "{text}"
        );
        let estimate: u64 = text
            .split("needs about ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no estimate in {text}"));
        needed = needed.max(estimate);
    }
    kill(probe);
    assert!(needed > 100);
    assert!(fake.requests().is_empty());

    with_cap(needed * 3 + needed / 2);
    let gateways = [
        start_as(&t, &fake, "gw-a"),
        start_as(&t, &fake, "gw-b"),
        start_as(&t, &fake, "gw-c"),
    ];
    let (done, answers) = std::sync::mpsc::channel();
    for i in 0..20 {
        let call = ask(gateways[i % 3].addr.clone(), tokens[i % 2].clone(), i);
        let done = done.clone();
        std::thread::spawn(move || done.send(call()));
    }
    let mut refused = Vec::new();
    until("every call refused or at the model", || {
        refused.extend(answers.try_iter());
        refused.len() + fake.requests().len() >= 20
    })
    .await;
    assert_eq!(fake.requests().len(), 3, "{refused:?}");
    for (code, body) in &refused {
        assert_ne!(*code, 200, "{body}");
        assert!(
            body.to_string()
                .contains("BudgetExceeded: users.total_budgets.daily_tokens"),
            "{body}"
        );
    }
    gate.open();
    let answered: Vec<(u16, serde_json::Value)> =
        tokio::task::spawn_blocking(move || (0..3).map(|_| answers.recv().unwrap()).collect())
            .await
            .unwrap();
    for (code, body) in answered {
        assert_eq!(code, 200, "{body}");
    }
    // Each user's records in their own schema, none in the home's files.
    let schemas = pg.psql(
        "together",
        "SELECT string_agg(table_schema::text, ',' ORDER BY 1) FROM information_schema.tables \
         WHERE table_name = 'usage' AND table_schema LIKE 'lurkbot\\_u\\_%'",
    );
    let schemas: Vec<&str> = schemas.split(',').collect();
    assert_eq!(schemas.len(), 2, "{schemas:?}");
    let recorded: u64 = schemas
        .iter()
        .map(|s| {
            pg.psql("together", &format!("SELECT count(*) FROM \"{s}\".usage"))
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(recorded, 3);
    for name in ["alice", "bob"] {
        assert!(!t.path(&format!("users/{name}/usage")).exists(), "{name}");
    }
    drop(gateways);
}

/// With the database gone, a web UI sign-in is refused with 503 — the attempt cannot be
/// counted, so it is not checked (never unlimited): not even the right password signs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_the_database_cannot_count_is_refused() {
    let pg = Postgres::start();
    let t = home_with_alice(&pg, "uncounted");
    let fake = FakeProvider::start(vec![]).await;
    let gw = start_as(&t, &fake, "gw-a");
    let addr = gw.addr.clone();
    let right = move || sign_in(&addr, "alice", "alice's long password");
    assert_eq!(
        tokio::task::spawn_blocking(right.clone()).await.unwrap(),
        200
    );
    pg.stop();
    for _ in 0..3 {
        let code = tokio::task::spawn_blocking(right.clone()).await.unwrap();
        assert_eq!(code, 503, "a sign-in not counted must not be checked");
    }
    drop(gw);
}
