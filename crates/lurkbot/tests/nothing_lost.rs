//! Nothing lost (ARCHITECTURE.md §6.3), as a user would try it: the gateway process is killed
//! with SIGKILL at a point of a turn the test chooses (the scripted model holds its call open;
//! a page server holds a tool's request open), started again on the same home, and each user
//! message is answered exactly once on its channel — no second turn, no second model call
//! beyond the one the kill cut, the transcript true.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::telegram_server::TelegramServer;
use serde_json::{Value, json};

use crate::util::{Running, Test, free_port, start_gateway as start, start_gateway_on};

const BOT_TOKEN: &str = "123456:lost-nothing";

/// Waits for `done` (every 20 ms, at most 60 s), failing with `what`.
pub(crate) async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SIGKILL, and the process is gone.
pub(crate) fn kill(mut gw: Running) {
    gw.child.kill().unwrap();
    gw.child.wait().unwrap();
}

pub(crate) fn model_env(fake: &FakeProvider) -> Vec<(String, String)> {
    vec![
        ("LURKBOT_MODEL".into(), "openai/fake".into()),
        ("OPENAI_BASE_URL".into(), format!("{}/v1", fake.url)),
    ]
}

/// A gateway answered by `fake`, named `id` (one of several on a home or a database).
pub(crate) fn start_as(t: &Test, fake: &FakeProvider, id: &str) -> Running {
    let mut env = model_env(fake);
    env.push(("LURKBOT_GATEWAY_ID".into(), id.into()));
    start_with(t, &env)
}

/// Telegram, served by `telegram` for the bot `token`, in the home's config and `.env`;
/// chat 42 may talk.
pub(crate) fn with_telegram(t: &Test, telegram: &TelegramServer, token: &str) {
    append_config(
        t,
        &format!(
            "[channels.telegram]\nbase_url = \"{}\"\nallow_from = [\"42\"]",
            telegram.url()
        ),
    );
    std::fs::write(t.path(".env"), format!("TELEGRAM_BOT_TOKEN={token}\n")).unwrap();
}

pub(crate) fn start_with(t: &Test, env: &[(String, String)]) -> Running {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    start(t, &env)
}

pub(crate) fn append_config(t: &Test, text: &str) {
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(t.path("config.toml"), format!("{config}\n{text}\n")).unwrap();
}

/// Every message of every session of the main agent, read where the home keeps them (its
/// files, or the PostgreSQL database `[state] url` names).
pub(crate) fn transcript_messages(t: &Test) -> Vec<Value> {
    let home = lurkbot_core::Home::open(&t.path("")).unwrap();
    let config = lurkbot_core::Config::load(&t.path("config.toml")).unwrap();
    // Opened for this read only: the sessions are the store's while it is open.
    let _store = lurkbot_agent::setup::open_state(&home, &config, None).unwrap();
    let sessions = lurkbot_agent::Sessions::open(&home, "main");
    let mut out = Vec::new();
    for entry in sessions.list().unwrap().values() {
        for line in sessions.history(&entry.session_id).unwrap() {
            let line = serde_json::to_value(line).unwrap();
            if line["type"] == "message" {
                out.push(line["message"].clone());
            }
        }
    }
    out
}

fn count_user_messages(t: &Test, text: &str) -> usize {
    transcript_messages(t)
        .iter()
        .filter(|m| m["role"] == "user" && m["content"].as_str().is_some_and(|c| c.contains(text)))
        .count()
}

/// `POST /v1/chat/completions` on `addr` with an `Idempotency-Key`: status and body (status 0
/// when the gateway was not there or died before answering).
pub(crate) fn chat_completion(addr: &str, token: &str, key: &str, message: &str) -> (u16, Value) {
    chat_completion_in(addr, token, key, "agent:main:main", message)
}

/// [`chat_completion`] on session `session`.
pub(crate) fn chat_completion_in(
    addr: &str,
    token: &str,
    key: &str,
    session: &str,
    message: &str,
) -> (u16, Value) {
    let body =
        json!({"model": "lurkbot", "messages": [{"role": "user", "content": message}]}).to_string();
    let (status, _, body) = crate::raw_http::http(
        addr,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             x-lurkbot-session: {session}\r\nIdempotency-Key: {key}\r\n\
             Content-Type: application/json"
        ),
        &body,
    );
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// A page server whose first `held` requests are held open (never answered: the tool call is
/// in flight when the gateway dies); later ones get a small page. How many it was asked.
pub(crate) fn page_server(held: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            if n <= held {
                open.push(stream);
                continue;
            }
            let page = "<html><body><p>The page the tool read after the restart.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    (addr, asked)
}

/// Telegram: a message whose turn is killed during its model call is answered once after the
/// restart; the update served again (its confirmation never reached Telegram) starts no
/// second turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_message_killed_during_its_model_call_is_answered_once() {
    let t = Test::init();
    let telegram = TelegramServer::start(BOT_TOKEN);
    with_telegram(&t, &telegram, BOT_TOKEN);
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Answered once after the restart."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    let update = telegram.user_writes(42, 42, "ada", "private", "what survives a crash?");
    until("the model call", || fake.requests().len() == 1).await;
    kill(gw);
    // The kill came after the message was recorded; Telegram may not have had the bot's
    // confirmation: the saved offset is the message's own, and Telegram serves it again.
    std::fs::write(
        t.path("channels/telegram/state.json"),
        json!({"offset": update}).to_string(),
    )
    .unwrap();
    assert!(telegram.serve_again(update));

    let gw = start_with(&t, &env);
    let sent = telegram.wait_sent(1, Duration::from_secs(60));
    assert_eq!(sent.len(), 1, "answered after the restart");
    assert_eq!(sent[0].text, "Answered once after the restart\\.");
    until("the update served again is seen as recorded", || {
        gw.stderr().contains("not answered twice")
    })
    .await;
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        telegram.sent().len(),
        1,
        "no second answer: {:?}",
        telegram.sent()
    );
    assert_eq!(
        fake.requests().len(),
        2,
        "one model call cut, one that answered"
    );
    // The resumed call carries the message once: it was not appended again.
    let resumed = fake.requests()[1].body.to_string();
    assert_eq!(
        resumed.matches("what survives a crash?").count(),
        1,
        "{resumed}"
    );
    assert_eq!(count_user_messages(&t, "what survives a crash?"), 1);
    let answers = transcript_messages(&t)
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(answers, 1, "one answer in the transcript");
}

/// A tool call in flight when the gateway dies: one that may have acted (`terminal_exec`) is
/// not run again — the model is told its effect is unknown — and one that only reads
/// (`web_fetch`) is. The client's retry with the same `Idempotency-Key` gets the answer
/// without another turn or model call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_cut_by_a_kill_is_run_again_only_when_it_only_reads() {
    let t = Test::init();
    let (pages, asked) = page_server(2);
    append_config(&t, &format!("[network]\nallow_hosts = [\"{pages}\"]"));
    let fake = FakeProvider::start(vec![
        Step::call(
            "c1",
            "terminal_exec",
            json!({"command": format!("rss fetch --url http://{pages}/feed.xml --timeout-ms 120000")}),
        ),
        Step::call("c2", "web_fetch", json!({"url": format!("http://{pages}/page")})),
        Step::text("Both calls handled."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);
    let token = t.gateway_token();

    // The first request: its `rss add` is in flight (the feed is held) when the gateway dies.
    let gw = start_with(&t, &env);
    let addr = gw.addr.clone();
    let (a, tk) = (addr.clone(), token.clone());
    let first = std::thread::spawn(move || chat_completion(&a, &tk, "key-1", "subscribe and read"));
    until("the feed request", || asked.load(Ordering::SeqCst) == 1).await;
    kill(gw);
    let (status, _) = first.join().unwrap();
    assert_ne!(status, 200, "the first request died with the gateway");

    // After the restart the cut `rss add` is not run again; the model is told, then asks for
    // a page, which is held too: the gateway dies again during a call that only reads.
    let gw = start_with(&t, &env);
    until("the page request", || asked.load(Ordering::SeqCst) == 2).await;
    let told = fake.requests()[1].body.to_string();
    assert!(told.contains("interrupted by a restart"), "{told}");
    kill(gw);

    // The third start reads the page again and answers; the retried request attaches.
    let gw = start_with(&t, &env);
    let (status, body) = {
        let (a, tk) = (gw.addr.clone(), token.clone());
        tokio::task::spawn_blocking(move || chat_completion(&a, &tk, "key-1", "subscribe and read"))
            .await
            .unwrap()
    };
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Both calls handled."
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        3,
        "the feed once, the page twice"
    );
    let read = fake.requests()[2].body.to_string();
    assert!(
        read.contains("The page the tool read after the restart."),
        "{read}"
    );
    assert_eq!(fake.requests().len(), 3, "no model call for the retry");
    // Another retry after the end: the same answer from the journal, still no model call.
    let (a, tk) = (gw.addr.clone(), token.clone());
    let (status, again) = tokio::task::spawn_blocking(move || {
        chat_completion(&a, &tk, "key-1", "subscribe and read")
    })
    .await
    .unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        again["choices"][0]["message"]["content"],
        "Both calls handled."
    );
    assert_eq!(fake.requests().len(), 3);
    // The same key for another message is refused.
    let (a, tk) = (gw.addr.clone(), token.clone());
    let (status, refused) =
        tokio::task::spawn_blocking(move || chat_completion(&a, &tk, "key-1", "something else"))
            .await
            .unwrap();
    assert_eq!(status, 422, "{refused}");
    // A key that is no key is refused before anything is recorded.
    let (a, tk) = (gw.addr.clone(), token.clone());
    let (status, refused) =
        tokio::task::spawn_blocking(move || chat_completion(&a, &tk, "two words", "hello"))
            .await
            .unwrap();
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused.to_string().contains("Idempotency-Key must be"),
        "{refused}"
    );
    assert_eq!(count_user_messages(&t, "hello"), 0);
    assert_eq!(count_user_messages(&t, "subscribe and read"), 1);
    drop(gw);
}

/// SIGTERM with a turn longer than the grace: the gateway stops at the end of the grace, and
/// the turn is resumed and answered after the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_longer_than_the_grace_is_resumed_after_the_next_start() {
    let t = Test::init();
    assert_eq!(
        t.run(&["config", "set", "gateway.shutdown_grace_secs", "0"])
            .status,
        0
    );
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Finished after the restart."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);
    let token = t.gateway_token();
    let gw = start_with(&t, &env);
    let (a, tk) = (gw.addr.clone(), token.clone());
    let first = std::thread::spawn(move || chat_completion(&a, &tk, "deploy-1", "a long task"));
    until("the model call", || fake.requests().len() == 1).await;
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    let _ = first.join().unwrap();
    // Stopped, not cancelled: no cancellation marker in the transcript.
    assert!(
        !transcript_messages(&t).iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.contains("cancelled"))),
        "{:?}",
        transcript_messages(&t)
    );
    let gw = start_with(&t, &env);
    let (a, tk) = (gw.addr.clone(), token.clone());
    let (status, body) =
        tokio::task::spawn_blocking(move || chat_completion(&a, &tk, "deploy-1", "a long task"))
            .await
            .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Finished after the restart."
    );
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(count_user_messages(&t, "a long task"), 1);
    drop(gw);
}

/// A reply the platform refuses for good (the user blocked the bot) is kept in the outbox and
/// listed by `lurkbot outbox` (exit 1), never dropped; `retry` puts it back in line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_refused_for_good_is_kept_and_listed() {
    let t = Test::init();
    let telegram = TelegramServer::start(BOT_TOKEN);
    with_telegram(&t, &telegram, BOT_TOKEN);
    let fake = FakeProvider::start(vec![Step::text("You will never read this.")]).await;
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    telegram.block(42);
    telegram.user_writes(42, 42, "ada", "private", "hello");
    until("the refused send", || telegram.send_attempts() >= 1).await;
    until("the outbox records the failure", || {
        t.run(&["outbox", "--json"]).stdout.contains("\"failed\"")
    })
    .await;
    let listed = t.run(&["outbox", "--json"]);
    assert_eq!(listed.status, 1, "a failed message makes the exit status 1");
    let rows = listed.json();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["state"], "failed");
    assert_eq!(rows[0]["channel"], "telegram");
    assert_eq!(rows[0]["chat"], "42");
    assert_eq!(rows[0]["text"], "You will never read this.");
    assert!(
        rows[0]["error"].as_str().unwrap().contains("blocked"),
        "{rows}"
    );
    let text = t.run(&["outbox"]);
    assert!(
        text.stdout.contains("0 pending, 1 failed"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("lurkbot outbox retry"),
        "{}",
        text.stdout
    );
    let status = t.run(&["gateway", "status"]);
    assert!(
        status.stdout.contains("outbox: 0 pending, 1 failed"),
        "{}",
        status.stdout
    );
    // Kept across a restart, and retried only when the owner says so.
    kill(gw);
    let id = rows[0]["id"].as_str().unwrap().to_string();
    let retried = t.run(&["outbox", "retry", &id]);
    assert_eq!(retried.status, 0, "{}", retried.stderr);
    let again = t.run(&["outbox", "retry", &id]);
    assert_eq!(again.status, 2, "only a failed message can be retried");
    assert!(
        again.stderr.contains("only a failed message"),
        "{}",
        again.stderr
    );
    let unknown = t.run(&["outbox", "retry", "out_nothing"]);
    assert_eq!(unknown.status, 2);
    assert_eq!(t.run(&["outbox", "--json"]).json()[0]["state"], "pending");
}

/// A WebSocket client (`lurkbot agent --gateway`) whose gateway is killed during its turn
/// reconnects, and sees the turn finish once the restarted gateway resumed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_sees_its_turn_finish_across_a_kill() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Seen through the restart."),
    ])
    .await;
    fake.record(true);
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    let port = free_port();
    let gw = start_gateway_on(&t, &env, port);
    let (client, token, ws) = (Test::init(), t.gateway_token(), gw.ws.clone());
    let asking = std::thread::spawn(move || {
        client.run_env(
            &["agent", "--gateway", &ws, "-m", "hold on"],
            &[("LURKBOT_GATEWAY_TOKEN", token.as_str())],
        )
    });
    until("the model call", || fake.requests().len() == 1).await;
    kill(gw);
    let gw = start_gateway_on(&t, &env, port);
    let answered = tokio::task::spawn_blocking(move || asking.join().unwrap())
        .await
        .unwrap();
    assert_eq!(answered.status, 0, "{}", answered.stderr);
    assert_eq!(answered.stdout, "Seen through the restart.\n");
    assert!(
        answered.stderr.contains("waiting for it to come back"),
        "{}",
        answered.stderr
    );
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(count_user_messages(&t, "hold on"), 1);
    drop(gw);
}

/// A cron run cut by a kill: its scheduled time is claimed once — after the restart the
/// scheduler attaches to the resumed turn instead of starting another, and records one run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_run_cut_by_a_kill_runs_once() {
    let t = Test::init();
    let added = t.run(&[
        "cron",
        "add",
        "--name",
        "brief",
        "--at",
        "+1s",
        "--message",
        "write the brief",
        "--json",
    ]);
    assert_eq!(added.status, 0, "{}", added.stderr);
    let id = added.json()["id"].as_str().unwrap().to_string();
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Brief written."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    until("the cron run's model call", || fake.requests().len() == 1).await;
    kill(gw);
    let gw = start_with(&t, &env);
    let runs = || t.run(&["cron", "runs", &id, "--json"]).json();
    until("the run recorded", || {
        runs().as_array().is_some_and(|r| !r.is_empty())
    })
    .await;
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    let runs = runs();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["status"], "ok", "{runs}");
    assert_eq!(
        fake.requests().len(),
        2,
        "one call cut, one that answered: no second run"
    );
}

/// A sub-agent whose gateway is killed during its model call is resumed after the restart and
/// reports to the session that spawned it, once, as its spawn would have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_cut_by_a_kill_reports_once_after_the_restart() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![]).await;
    fake.record(true);
    fake.route(
        "session=agent:main:main",
        vec![
            Step::call("c1", "sessions_spawn", json!({"task": "Count the stars"})),
            Step::text("A helper is on it."),
            Step::text("The helper counted many stars."),
        ],
    );
    fake.route(
        "Subagent Context",
        vec![
            Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
            Step::text("Many stars."),
        ],
    );
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    let (status, body) =
        chat_completion(&gw.addr, &t.gateway_token(), "k-stars", "Count the stars?");
    assert_eq!(status, 200, "{body}");
    until("the sub-agent's model call", || fake.requests().len() == 3).await;
    kill(gw);

    let gw = start_with(&t, &env);
    until("the report", || fake.requests().len() == 5).await;
    let reported = || {
        transcript_messages(&t)
            .iter()
            .filter(|m| {
                m["role"] == "assistant" && m["content"] == "The helper counted many stars."
            })
            .count()
    };
    until("the report's answer in the transcript", || reported() == 1).await;
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    let report = fake.requests()[4].body.to_string();
    assert!(report.contains("just completed"), "{report}");
    assert!(report.contains("Many stars."), "{report}");
    assert_eq!(fake.requests().len(), 5, "no second report");
    assert_eq!(reported(), 1);
}
