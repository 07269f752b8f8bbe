//! Two gateway processes on one home (ARCHITECTURE.md §10): a turn belongs to the gateway
//! that admitted it while that gateway lives — the other leaves it alone, at its start and
//! after — and when its gateway is killed (SIGKILL) the other takes it over and answers it
//! once, with no second model call beyond the one the kill cut.

use std::io::{Read, Write};
use std::net::TcpStream;

use lurkbot_llm::fake::{FakeProvider, Gate, Step};

use crate::nothing_lost::{chat_completion, kill, transcript_messages, until};
use crate::util::{Test, start_gateway};

/// Whether `GET /health` on `addr` answers 200: the gateway serves, so its start — the
/// look for turns to take over — is behind it.
fn serves(addr: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return false;
    };
    let request = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateways_turn_is_taken_over_by_the_other_once() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Taken over and answered."),
    ])
    .await;
    fake.record(true);
    let base = format!("{}/v1", fake.url);
    let env = |id: &'static str| {
        [
            ("LURKBOT_MODEL", "openai/fake"),
            ("OPENAI_BASE_URL", base.clone().leak() as &str),
            ("LURKBOT_GATEWAY_ID", id),
        ]
    };
    let first = start_gateway(&t, &env("gw-first"));
    let token = t.gateway_token();
    let asked = {
        let (addr, token) = (first.addr.clone(), token.clone());
        std::thread::spawn(move || chat_completion(&addr, &token, "k-1", "who answers me?"))
    };
    until("the model call", || fake.requests().len() == 1).await;

    // The second gateway starts while the first runs the turn: it leaves it alone.
    let second = start_gateway(&t, &env("gw-second"));
    until("the second gateway serves", || serves(&second.addr)).await;
    let status = t.run(&["gateway", "status"]);
    assert!(
        status.stdout.contains("gateway gw-first: runs 1 of them"),
        "{}",
        status.stdout
    );
    assert_eq!(fake.requests().len(), 1, "no second model call");

    // The first dies: the second takes the turn over (it sees the first's lock gone).
    kill(first);
    let answered = tokio::task::spawn_blocking(move || asked.join().unwrap())
        .await
        .unwrap();
    assert_eq!(answered.0, 0, "the client lost its gateway with it");
    until("the turn taken over", || fake.requests().len() == 2).await;
    let (code, body) = {
        let (addr, token) = (second.addr.clone(), token.clone());
        tokio::task::spawn_blocking(move || {
            chat_completion(&addr, &token, "k-1", "who answers me?")
        })
        .await
        .unwrap()
    };
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Taken over and answered."
    );
    assert!(
        second.stderr().contains("resuming a turn cut by a restart"),
        "{}",
        second.stderr()
    );
    let (status, stderr) = tokio::task::spawn_blocking(move || second.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
    let messages = transcript_messages(&t);
    let asked = messages
        .iter()
        .filter(|m| m["role"] == "user" && m["content"] == "who answers me?")
        .count();
    let answers = messages.iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!((asked, answers), (1, 1), "{messages:?}");
}

#[test]
fn two_gateways_with_one_id_on_one_home_are_refused() {
    let t = Test::init();
    let env = [("LURKBOT_GATEWAY_ID", "twin")];
    let first = start_gateway(&t, &env);
    let second = t.run_env(&["gateway", "--port", "0"], &env);
    drop(first);
    assert_ne!(second.status, 0);
    assert!(
        second.stderr.contains("already runs as 'twin'"),
        "{}",
        second.stderr
    );
    let bad = t.run_env(
        &["gateway", "--port", "0"],
        &[("LURKBOT_GATEWAY_ID", "../x")],
    );
    assert_eq!(bad.status, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("LURKBOT_GATEWAY_ID"), "{}", bad.stderr);
}
