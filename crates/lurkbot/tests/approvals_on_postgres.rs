//! The owner's decisions across gateways sharing one PostgreSQL database: a turn that runs on A
//! asks for an approval; the request reaches a client connected to B only, whose answer, given
//! on B, goes back to A — the call runs once and the turn ends; its allow-always holds on B. A stranger's pairing request
//! received by A's Telegram poller is approved through B, and A answers them from then on.

use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_test_support::postgres::Postgres;
use serde_json::json;

use crate::gateways_on_postgres::home_on;
use crate::nodes::client;
use crate::nothing_lost::{append_config, chat_completion, start_as, until};
use lurkbot_test_support::telegram_server::TelegramServer;

const CREATE: &str = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";

/// A home on database `db` of `pg` whose calendar the agent may write (an approval is asked
/// for each event it creates).
fn calendar_home(pg: &Postgres, db: &str) -> crate::util::Test {
    let t = home_on(pg, db);
    let set = t.run(&["config", "set", "permissions.calendar", "read-write"]);
    assert_eq!(set.status, 0, "{}", set.stderr);
    t
}

/// A model that books the dentist (`CREATE`, which asks for an approval), then says `reply`
/// and goes on with `then`; its requests recorded.
async fn booking_model(reply: &str, then: Vec<Step>) -> FakeProvider {
    let mut steps = vec![
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::text(reply),
    ];
    steps.extend(then);
    let fake = FakeProvider::start(steps).await;
    fake.record(true);
    fake
}

/// Waits until gateway B's client is recorded in database `db` (its presence lease).
async fn until_b_has_a_client(pg: &Postgres, db: &str) {
    until("B's client recorded", || {
        pg.psql(
            db,
            "SELECT count(*) FROM leases WHERE name = 'clients:gw-b'",
        ) == "1"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_asked_on_one_gateway_is_answered_on_another() {
    let pg = Postgres::start();
    let t = calendar_home(&pg, "approvals");
    let again = CREATE.replace("Dentist", "Checkup");
    let fake = booking_model(
        "Booked.",
        vec![
            Step::call("c2", "terminal_exec", json!({"command": again})),
            Step::text("Booked again."),
        ],
    )
    .await;
    std::fs::write(t.path("workspace/MEMORY.md"), "The dentist is on Monday.\n").unwrap();
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");
    let token = t.gateway_token();
    // Each gateway keeps its own memory index of the shared memory files.
    until("each gateway's own index", || {
        t.path("memory/index-gw-a.sqlite").is_file() && t.path("memory/index-gw-b.sqlite").is_file()
    })
    .await;
    assert!(!t.path("memory/index.sqlite").exists());
    // The human is on B; nobody is connected to A. B says so in the database.
    let mut on_b = client(&b.ws, &token).await;
    until_b_has_a_client(&pg, "approvals").await;

    let asking = {
        let (addr, token) = (a.addr.clone(), token.clone());
        std::thread::spawn(move || chat_completion(&addr, &token, "k-approve", "book the dentist"))
    };
    let requested = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let frame = on_b.frame().await;
            assert!(!frame.is_null(), "B closed the connection");
            if frame["event"] == "exec.approval.requested" {
                return frame["payload"].clone();
            }
        }
    })
    .await
    .expect("B's client is asked");
    assert!(
        requested["summary"].to_string().contains("Dentist"),
        "{requested}"
    );
    let id = requested["approvalId"].as_str().unwrap().to_string();

    let answered = on_b
        .call(
            "exec.approval.resolve",
            json!({"approvalId": id, "decision": "allow-always"}),
            &mut Vec::new(),
        )
        .await;
    assert_eq!(answered["ok"], true, "{answered}");
    assert_eq!(answered["payload"]["forwarded"], true, "{answered}");

    let (code, body) = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || asking.join().unwrap()),
    )
    .await
    .expect("A's turn went on after B's answer")
    .unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Booked.");
    let events = t.exec_json(
        "cal list-events --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z",
    )["result"]["events"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(events, 1, "run once, after the approval given on B");
    assert_eq!(fake.requests().len(), 2);

    // The allow-always decision is the database's: the same command through B runs unasked.
    assert!(!t.path("exec-approvals.json").exists());
    let remembered = pg.psql(
        "approvals",
        "SELECT body FROM documents WHERE name = 'exec-approvals.json'",
    );
    assert!(
        remembered.contains("terminal_exec:cal create-event"),
        "{remembered}"
    );
    drop(on_b);
    let (addr, token) = (b.addr.clone(), token.clone());
    let (code, body) = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || {
            chat_completion(&addr, &token, "k-again", "and a checkup")
        }),
    )
    .await
    .expect("no approval asked again")
    .unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Booked again.");
    drop((a, b));
}

/// With no client connected to any gateway, an approval asked on PostgreSQL is denied at once
/// (as on one gateway), not after the ten minutes a human would have had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nobody_on_any_gateway_an_approval_is_denied_at_once() {
    let pg = Postgres::start();
    let t = calendar_home(&pg, "nobody");
    let fake = booking_model("Not booked.", Vec::new()).await;
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");
    let (addr, token) = (a.addr.clone(), t.gateway_token());
    let (code, body) = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || chat_completion(&addr, &token, "k-nobody", "book")),
    )
    .await
    .expect("denied at once, not left waiting for a human")
    .unwrap();
    assert_eq!(code, 200, "{body}");
    let told = fake.requests()[1].body.to_string();
    assert!(told.contains("denied: the user did not approve"), "{told}");
    assert_eq!(
        pg.psql(
            "nobody",
            "SELECT count(*) FROM leases WHERE name LIKE 'clients:%'"
        ),
        "0"
    );
    drop((a, b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pairing_received_by_one_gateway_is_approved_through_another() {
    const BOT: &str = "123456:pairing";
    let pg = Postgres::start();
    let t = home_on(&pg, "pairing");
    let telegram = TelegramServer::start(BOT);
    append_config(
        &t,
        &format!(
            "[channels.telegram]\nbase_url = \"{}\"\ndm_policy = \"pairing\"",
            telegram.url()
        ),
    );
    std::fs::write(t.path(".env"), format!("TELEGRAM_BOT_TOKEN={BOT}\n")).unwrap();
    let fake = FakeProvider::start(vec![Step::text("Welcome, Ann.")]).await;
    let a = start_as(&t, &fake, "gw-a");
    until("A polls", || {
        pg.psql(
            "pairing",
            "SELECT owner FROM leases WHERE name = 'channel:telegram'",
        ) == "gw-a"
    })
    .await;
    let b = start_as(&t, &fake, "gw-b");

    telegram.user_writes(77, 77, "ann", "private", "hello");
    let sent = telegram.wait_sent(1, std::time::Duration::from_secs(30));
    let code = sent[0]
        .text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() == 8
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .unwrap_or_else(|| panic!("no code in {:?}", sent[0].text))
        .to_string();
    // The request is the database's, not a file of the home.
    assert!(!t.path("channels/pairing.json").exists());
    let stored = pg.psql(
        "pairing",
        "SELECT body FROM documents WHERE name = 'channels/pairing.json'",
    );
    assert!(stored.contains(&code), "{stored}");

    let mut on_b = client(&b.ws, &t.gateway_token()).await;
    let approved = on_b
        .call(
            "channels.pairing.approve",
            json!({"channel": "telegram", "code": code}),
            &mut Vec::new(),
        )
        .await;
    assert_eq!(approved["ok"], true, "{approved}");

    telegram.user_writes(77, 77, "ann", "private", "hello again");
    let sent = telegram.wait_sent(2, std::time::Duration::from_secs(30));
    let texts: Vec<&str> = sent.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts[1].contains("Welcome, Ann"),
        "A answers the sender B approved: {texts:?}"
    );
    drop((a, b));
}

/// A client that connects to B after A's turn asked for an approval is shown it on connecting
/// (it waits on A, recorded in the database), and answers it through B: the call runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_arriving_on_another_gateway_is_shown_the_waiting_approval() {
    let pg = Postgres::start();
    let t = calendar_home(&pg, "arriving");
    let fake = booking_model("Booked late.", Vec::new()).await;
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");
    let token = t.gateway_token();
    let mut first = client(&b.ws, &token).await;
    until_b_has_a_client(&pg, "arriving").await;
    let asking = {
        let (addr, token) = (a.addr.clone(), token.clone());
        std::thread::spawn(move || chat_completion(&addr, &token, "k-late", "book it"))
    };
    let asked = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let frame = first.frame().await;
            assert!(!frame.is_null(), "B closed the connection");
            if frame["event"] == "exec.approval.requested" {
                return frame["payload"]["approvalId"].as_str().unwrap().to_string();
            }
        }
    })
    .await
    .expect("B's first client is asked");
    // Another human arrives on B: shown what waits on A.
    let mut late = client(&b.ws, &token).await;
    let shown = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let frame = late.frame().await;
            assert!(!frame.is_null(), "B closed the connection");
            if frame["event"] == "exec.approval.requested" {
                return frame["payload"].clone();
            }
        }
    })
    .await
    .expect("the late client is shown the waiting approval");
    assert_eq!(shown["approvalId"], asked.as_str(), "{shown}");
    let answered = late
        .call(
            "exec.approval.resolve",
            json!({"approvalId": asked, "decision": "allow-once"}),
            &mut Vec::new(),
        )
        .await;
    assert_eq!(answered["ok"], true, "{answered}");
    let (code, body) = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || asking.join().unwrap()),
    )
    .await
    .expect("A's turn went on")
    .unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Booked late.");
    // Answered: no longer recorded as waiting.
    assert_eq!(
        pg.psql(
            "arriving",
            "SELECT count(*) FROM documents WHERE name LIKE 'approvals/pending/%'"
        ),
        "0"
    );
    drop((first, late, a, b));
}

/// The gateway whose turn waits for an approval is SIGKILLed: its recorded request is not
/// shown to a client arriving on another gateway (nobody could answer it there), and that
/// reading removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_of_a_killed_gateway_is_not_shown() {
    let pg = Postgres::start();
    let t = calendar_home(&pg, "killed");
    let fake = booking_model("never reached", Vec::new()).await;
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");
    let token = t.gateway_token();
    let mut first = client(&b.ws, &token).await;
    until_b_has_a_client(&pg, "killed").await;
    let (addr, key) = (a.addr.clone(), token.clone());
    std::thread::spawn(move || chat_completion(&addr, &key, "k-killed", "book"));
    let asked = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let frame = first.frame().await;
            assert!(!frame.is_null(), "B closed the connection");
            if frame["event"] == "exec.approval.requested" {
                return frame["payload"]["approvalId"].as_str().unwrap().to_string();
            }
        }
    })
    .await
    .expect("B's client is asked");
    let recorded =
        format!("SELECT count(*) FROM documents WHERE name = 'approvals/pending/{asked}'");
    assert_eq!(pg.psql("killed", &recorded), "1");
    // Each gateway's id is a session-level advisory lock: A's goes once the database has seen
    // its connection end (a moment after the SIGKILL; a client arriving within that moment
    // could still be shown A's request, which nobody could answer — waited for here, not slept).
    let ids = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1";
    let held: u32 = pg.psql("killed", ids).parse().unwrap();
    crate::nothing_lost::kill(a);
    until("the database sees A gone", || {
        pg.psql("killed", ids).parse::<u32>().unwrap() < held
    })
    .await;
    // B may resume the turn and ask again (a new approval, its own): A's is not shown.
    let mut late = client(&b.ws, &token).await;
    let mut seen = Vec::new();
    let status = late.call("status", json!({}), &mut seen).await;
    assert_eq!(status["ok"], true, "{status}");
    assert!(
        seen.iter()
            .all(|f| f["payload"]["approvalId"] != asked.as_str()),
        "{seen:?}"
    );
    assert_eq!(pg.psql("killed", &recorded), "0", "removed by the reader");
    drop((first, late, b));
}
