//! The state seam on PostgreSQL (a real server, Debian's 15): the same journal, inbound
//! records, outbox and leases as the embedded store, shared by several gateways — each a
//! store of its own with its own connection, as gateways on several machines have.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use lurkbot_core::Home;
use lurkbot_state::{
    Admitted, Location, NewOutgoing, NewTurn, OutgoingState, StateError, StateUrl, Store, TurnState,
};
use lurkbot_test_support::postgres::Postgres;
use serde_json::json;

fn home() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    (dir, home)
}

fn location(url: &str) -> Location {
    Location::Postgres(Box::new(StateUrl::parse(url).unwrap()))
}

fn turn(id: &str, source: Option<&str>) -> NewTurn {
    NewTurn {
        id: id.into(),
        source: source.map(Into::into),
        session: "agent:main:main".into(),
        origin: json!({"kind": "channel", "channel": "telegram", "chat": "42"}),
        message: "hello".into(),
        options: json!({"model": "openai/fake"}),
    }
}

fn ids(turns: &[lurkbot_state::TurnRecord]) -> Vec<&str> {
    turns.iter().map(|t| t.id.as_str()).collect()
}

/// Opens the store as `owner`, waiting while the server still holds the id of a store just
/// dropped (its connection's end reaches the server a moment after the drop).
fn open_again(home: &Home, at: &Location, owner: &str) -> Store {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Store::open_at(home, at, Some(owner)) {
            Ok(store) => return store,
            Err(StateError::OwnerTaken(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn the_journal_outbox_and_inbound_records_live_in_postgres() {
    let pg = Postgres::start();
    let at = location(&pg.database("journal"));
    let (_dir, home) = home();
    let store = Store::open_at(&home, &at, Some("gw-a")).unwrap();
    assert_eq!(store.backend(), "postgres");
    assert!(!store.describe(&home).contains("state.sqlite"));
    assert_eq!(store.schema_version().unwrap(), 3);
    store.ready().unwrap();

    // One source id starts one turn; its inbound record is handled by the admission.
    assert!(
        store
            .receive("telegram:42:7", "telegram", &json!({"text": "hi"}))
            .unwrap()
    );
    assert!(
        !store
            .receive("telegram:42:7", "telegram", &json!({"text": "hi"}))
            .unwrap()
    );
    assert_eq!(store.unhandled("telegram").unwrap().len(), 1);
    assert_eq!(
        store.admit(&turn("run_a", Some("telegram:42:7"))).unwrap(),
        Admitted::New
    );
    let Admitted::Known(known) = store.admit(&turn("run_b", Some("telegram:42:7"))).unwrap() else {
        panic!("a second admission of one source id")
    };
    assert_eq!(known.id, "run_a");
    assert!(store.unhandled("telegram").unwrap().is_empty());

    // The journal keeps every step.
    assert_eq!(store.begin("run_a").unwrap(), 1);
    store.set_base("run_a", 120).unwrap();
    store.set_base("run_a", 999).unwrap();
    store.set_step("run_a", 2, Some("call_1 read")).unwrap();
    let running = store.turn("run_a").unwrap().unwrap();
    assert_eq!(
        (
            running.state,
            running.base,
            running.step,
            running.tool.as_deref()
        ),
        (TurnState::Running, Some(120), 2, Some("call_1 read"))
    );
    assert_eq!(running.origin["chat"], "42");
    assert_eq!(running.options["model"], "openai/fake");
    assert!(matches!(
        store.begin("nope"),
        Err(StateError::NotFound { .. })
    ));

    // Ending it records what it sends, in order.
    let reply = |body: &str| NewOutgoing {
        channel: "telegram".into(),
        chat: "42".into(),
        reply_to: Some("7".into()),
        kind: "text".into(),
        body: body.into(),
    };
    let sent = store
        .finish("run_a", Ok("Hi!"), &[reply("first"), reply("second")])
        .unwrap();
    assert_eq!(sent.len(), 2);
    let ended = store.turn_by_source("telegram:42:7").unwrap().unwrap();
    assert_eq!(
        (ended.state, ended.reply.as_deref()),
        (TurnState::Done, Some("Hi!"))
    );
    let pending = store.outbox(&[OutgoingState::Pending], 10).unwrap();
    assert_eq!(
        pending.iter().map(|o| o.body.as_str()).collect::<Vec<_>>(),
        ["first", "second"]
    );
    store.piece_sent(&sent[0].id, 1, Some("m-9")).unwrap();
    store.mark_sent(&sent[0].id).unwrap();
    store
        .mark_failed(&sent[1].id, "chat not found", true)
        .unwrap();
    assert_eq!(store.outbox_counts().unwrap(), (0, 1));
    let first = store.outgoing(&sent[0].id).unwrap().unwrap();
    assert_eq!(
        (first.state, first.platform_id.as_deref(), first.attempts),
        (OutgoingState::Sent, Some("m-9"), 1)
    );
    store.retry_outgoing(&sent[1].id).unwrap();
    assert!(
        store.retry_outgoing(&sent[1].id).is_err(),
        "only a failed one"
    );
    assert_eq!(store.outbox_counts().unwrap(), (1, 0));
    assert_eq!(store.turn_counts().unwrap(), [0, 0, 1, 0]);
    assert_eq!(store.prune_turns(lurkbot_core::now_ms() + 1).unwrap(), 1);
    assert_eq!(store.prune_outbox(lurkbot_core::now_ms() + 1).unwrap(), 1);
    assert_eq!(store.prune_inbound(lurkbot_core::now_ms() + 1).unwrap(), 1);

    // What was written is in the database, for another gateway to read.
    assert_eq!(pg.psql("journal", "SELECT count(*) FROM outbox"), "1");
    assert_eq!(
        pg.psql("journal", "SELECT version FROM lurkbot_schema"),
        "3"
    );
}

#[test]
fn gateways_share_turns_by_their_leases_and_take_over_a_dead_ones() {
    let pg = Postgres::start();
    let at = location(&pg.database("leases"));
    let (_dir, home) = home();
    let first = Store::open_at(&home, &at, Some("gw-first")).unwrap();
    first.admit(&turn("run_a", None)).unwrap();
    first.begin("run_a").unwrap();
    first.admit(&turn("run_b", None)).unwrap();
    assert!(first.claim_unfinished().unwrap().is_empty(), "its own");

    // Another gateway leaves a live one's turns alone.
    let second = Store::open_at(&home, &at, Some("gw-second")).unwrap();
    assert!(second.claim_unfinished().unwrap().is_empty());
    let seen = second.leases().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter().all(|l| l.owner == "gw-first" && l.alive),
        "{seen:?}"
    );

    assert_eq!(
        second.others_running().unwrap(),
        ["1 other connection(s) to the database"],
        "the first runs (what `state migrate` refuses to move under)"
    );
    // The same id twice is refused while the first lives.
    let twin = Store::open_at(&home, &at, Some("gw-first")).unwrap_err();
    assert!(matches!(twin, StateError::OwnerTaken(_)), "{twin}");

    // The first's connection ends (its process died): its turns are free at once (well
    // before their expiry), taken once.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    let taken = loop {
        let taken = second.claim_unfinished().unwrap();
        if !taken.is_empty() || Instant::now() > deadline {
            break taken;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ids(&taken), ["run_a", "run_b"], "oldest first");
    assert!(second.claim_unfinished().unwrap().is_empty(), "taken once");
    let third = Store::open_at(&home, &at, Some("gw-third")).unwrap();
    assert!(
        third.claim_unfinished().unwrap().is_empty(),
        "the second's now"
    );

    // A gateway that stops renewing (a host gone without closing its connection) loses its
    // leases once they expire, though its session lock lives on.
    pg.psql(
        "leases",
        "UPDATE leases SET expires_ms = 0 WHERE owner = 'gw-second'",
    );
    assert_eq!(ids(&third.claim_unfinished().unwrap()), ["run_a", "run_b"]);
    assert!(
        third
            .leases()
            .unwrap()
            .iter()
            .all(|l| l.owner == "gw-third")
    );
    assert_eq!(second.renew_leases().unwrap(), 0, "nothing left to renew");

    // Back under its id after a crash, a gateway takes what its earlier self left.
    drop(third);
    let again = open_again(&home, &at, "gw-third");
    assert_eq!(ids(&again.claim_unfinished().unwrap()), ["run_a", "run_b"]);
    assert_eq!(again.release_leases().unwrap(), 2);
}

#[test]
fn twenty_admissions_of_one_source_over_three_gateways_start_one_turn() {
    let pg = Postgres::start();
    let at = location(&pg.database("race"));
    let (_dir, home) = home();
    let stores: Vec<Store> = (0..3)
        .map(|i| Store::open_at(&home, &at, Some(&format!("gw-{i}"))).unwrap())
        .collect();
    let handles: Vec<_> = (0..20)
        .map(|i| {
            let store = stores[i % 3].clone();
            std::thread::spawn(move || {
                store
                    .admit(&turn(&format!("run_{i}"), Some("api:key-1")))
                    .unwrap()
            })
        })
        .collect();
    let outcomes: Vec<Admitted> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let new = outcomes.iter().filter(|o| **o == Admitted::New).count();
    assert_eq!(new, 1, "{outcomes:?}");
    assert_eq!(pg.psql("race", "SELECT count(*) FROM turns"), "1");
    assert_eq!(pg.psql("race", "SELECT count(*) FROM leases"), "1");
}

#[test]
fn a_database_from_a_newer_lurkbot_is_refused_and_a_password_never_shown() {
    let pg = Postgres::start();
    let url = pg.database("newer");
    let at = location(&url);
    let (_dir, home) = home();
    drop(Store::open_at(&home, &at, None).unwrap());
    pg.psql("newer", "UPDATE lurkbot_schema SET version = 99");
    let err = Store::open_at(&home, &at, None).unwrap_err();
    assert!(matches!(err, StateError::Newer { found: 99, .. }), "{err}");

    // A wrong port: the error names the database, never its password.
    let wrong = format!(
        "postgres://lurk:hunter2-secret@127.0.0.1:{}/newer",
        lurkbot_test_support::ports::free_port()
    );
    let err = Store::open_at(&home, &location(&wrong), None).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("cannot connect to postgres://lurk@127.0.0.1"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn tls_verifies_the_server_against_the_system_or_the_named_ca() {
    let (pg, ca) = Postgres::start_tls();
    pg.database("tls");
    let (_dir, home) = home();
    let base = pg.url("tls");

    // Verified against the test CA it names: connected, over TLS.
    let pinned = format!("{base}?sslmode=verify-full&sslrootcert={}", ca.display());
    let store = Store::open_at(&home, &location(&pinned), None).unwrap();
    store.admit(&turn("run_tls", None)).unwrap();
    let encrypted = pg.psql(
        "tls",
        "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE s.ssl AND a.application_name <> 'psql'",
    );
    assert_eq!(encrypted, "1", "the store's connection is encrypted");

    // The system's roots do not know the test CA: refused, saying why (libpq's `require`
    // would have connected to anyone).
    for mode in ["require", "prefer"] {
        let err = Store::open_at(&home, &location(&format!("{base}?sslmode={mode}")), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("certificate"), "{mode}: {err}");
        assert!(
            err.contains("not signed by a CA this machine trusts")
                && err.contains("add sslrootcert=/path/to/ca.pem"),
            "{mode}: the cause and the fix are named: {err}"
        );
    }
    // A CA file that is not there says so.
    let missing = format!("{base}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem");
    let err = Store::open_at(&home, &location(&missing), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("sslrootcert /nonexistent/ca.pem"), "{err}");
    // In the clear when asked (loopback's default).
    let clear = Store::open_at(&home, &location(&base), None).unwrap();
    assert_eq!(clear.turn_counts().unwrap(), [1, 0, 0, 0]);
}

/// On a shared gateway each user's state is their own on PostgreSQL too: a schema per user,
/// so the gateway's store and another user's never see (or take over) their turns.
#[test]
fn each_users_state_is_apart_in_one_database() {
    let pg = Postgres::start();
    let at = location(&pg.database("users"));
    let (_dir, home) = home();
    let ada_home = home.member("ada").unwrap();
    let bob_home = home.member("bob").unwrap();
    let gateway = Store::open_at(&home, &at, Some("gw-main")).unwrap();
    let ada = Store::open_at(&ada_home, &at, None).unwrap();
    let bob = Store::open_at(&bob_home, &at, None).unwrap();
    ada.admit(&turn("run_ada", Some("api:same-key"))).unwrap();
    assert_eq!(
        bob.admit(&turn("run_bob", Some("api:same-key"))).unwrap(),
        Admitted::New,
        "one source id per user, not per database"
    );
    assert!(gateway.unfinished().unwrap().is_empty());
    assert_eq!(ids(&bob.unfinished().unwrap()), ["run_bob"]);
    drop(ada);
    // Ada's gateway gone (its lock released: only the gateway's and Bob's stay): her turn is
    // taken by her next store, by nobody else's.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pg.psql(
        "users",
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1",
    ) != "2"
    {
        assert!(Instant::now() < deadline, "Ada's lock never went");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gateway.claim_unfinished().unwrap().is_empty());
    assert!(bob.claim_unfinished().unwrap().is_empty());
    let deadline = Instant::now() + Duration::from_secs(5);
    let ada_again = Store::open_at(&ada_home, &at, None).unwrap();
    let taken = loop {
        let taken = ada_again.claim_unfinished().unwrap();
        if !taken.is_empty() || Instant::now() > deadline {
            break taken;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ids(&taken), ["run_ada"]);
    let schemas = pg.psql(
        "users",
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'turns'",
    );
    assert_eq!(schemas, "3", "the gateway's and one per user");
}

/// A turn's end the database could not take is kept (read as ended meanwhile) and written at
/// the next flush once it answers, with what it sends; a process with the same id started
/// after a stop writes what the last one left, once.
#[test]
fn a_turn_end_the_database_missed_is_kept_and_written_later() {
    let pg = Postgres::start();
    let at = location(&pg.database("deferred"));
    let (_dir, home) = home();
    let store = Store::open_at(&home, &at, Some("gw-a")).unwrap();
    store.admit(&turn("run_a", Some("api:k1"))).unwrap();
    store.admit(&turn("run_b", Some("api:k2"))).unwrap();
    pg.stop();
    let reply = NewOutgoing {
        channel: "telegram".into(),
        chat: "42".into(),
        reply_to: None,
        kind: "text".into(),
        body: "The answer.".into(),
    };
    assert!(
        store
            .finish_or_defer("run_a", Ok("The answer."), &[reply])
            .is_err()
    );
    assert!(
        store
            .record_usage(1_700_000_000_000, r#"{"tokens":7}"#)
            .is_err()
    );
    assert_eq!(store.deferred_waiting(), 2);
    assert!(home.join("state/deferred/gw-a.jsonl").is_file());
    assert!(store.flush_deferred().is_err(), "still down: kept");
    assert_eq!(store.deferred_waiting(), 2);
    pg.start_again();
    let known = store.turn("run_a").unwrap().unwrap();
    assert_eq!(
        known.state,
        TurnState::Done,
        "read as ended before it is written"
    );
    assert_eq!(known.reply.as_deref(), Some("The answer."));
    let sent = store.flush_deferred().unwrap();
    assert_eq!(
        sent.len(),
        1,
        "its message, recorded for the caller to send"
    );
    assert_eq!(store.deferred_waiting(), 0);
    assert_eq!(
        pg.psql("deferred", "SELECT state FROM turns WHERE id = 'run_a'"),
        "done"
    );
    assert_eq!(pg.psql("deferred", "SELECT count(*) FROM usage"), "1");
    assert_eq!(pg.psql("deferred", "SELECT count(*) FROM outbox"), "1");

    // A gateway killed after writing what it kept, before emptying its file: the next flush
    // writes nothing twice (the ended turn sends nothing, the same usage record is not added).
    let left = home.join("state/deferred/gw-dead.jsonl");
    std::fs::write(
        &left,
        concat!(
            r#"{"kind":"finish","id":"run_a","reply":"The answer.","error":null,"outgoing":[{"channel":"telegram","chat":"42","reply_to":null,"kind":"text","body":"The answer."}]}"#,
            "\n",
            r#"{"kind":"usage","ts":1700000000000,"record":"{\"tokens\":7}"}"#,
            "\n"
        ),
    )
    .unwrap();
    assert!(
        store.flush_deferred().unwrap().is_empty(),
        "nothing to send again"
    );
    assert_eq!(pg.psql("deferred", "SELECT count(*) FROM usage"), "1");
    assert_eq!(pg.psql("deferred", "SELECT count(*) FROM outbox"), "1");
    assert!(
        !left.exists(),
        "the dead gateway's file is gone once written"
    );

    // A stop with writes waiting; the next process with the id writes them, once.
    pg.stop();
    assert!(
        store
            .finish_or_defer("run_b", Err("the model failed"), &[])
            .is_err()
    );
    assert!(
        store
            .record_usage(1_700_000_000_001, r#"{"tokens":9}"#)
            .is_err()
    );
    drop(store);
    pg.start_again();
    let again = open_again(&home, &at, "gw-a");
    assert!(again.flush_deferred().unwrap().is_empty());
    assert_eq!(
        pg.psql("deferred", "SELECT state FROM turns WHERE id = 'run_b'"),
        "failed"
    );
    assert_eq!(pg.psql("deferred", "SELECT count(*) FROM usage"), "2");
    assert!(again.flush_deferred().unwrap().is_empty());
    assert_eq!(
        pg.psql("deferred", "SELECT count(*) FROM usage"),
        "2",
        "not twice"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("state/deferred/gw-a.jsonl")).unwrap(),
        "",
        "nothing left"
    );
}

/// A user's schema is the user's own by construction: the two names the review found sharing
/// one (the old mapping made `-` and `_` alike and kept 32 bits of a hash) read none of each
/// other's turns; and a database made before keeps a user's state (its old schema renamed).
#[test]
fn two_names_never_share_a_schema_and_old_schemas_are_renamed() {
    let pg = Postgres::start();
    let at = location(&pg.database("names"));
    let (_dir, home) = home();
    let (one, two) = (
        "u_-_-_-_-__--___-----_____-_--_",
        "u__-__-_____--__--_--___--_--__",
    );
    let one_store = Store::open_at(&home.member(one).unwrap(), &at, None).unwrap();
    let two_store = Store::open_at(&home.member(two).unwrap(), &at, None).unwrap();
    one_store.admit(&turn("run_one", None)).unwrap();
    assert!(
        two_store.unfinished().unwrap().is_empty(),
        "two reads one's turn"
    );
    assert!(two_store.turn("run_one").unwrap().is_none());
    assert_eq!(ids(&one_store.unfinished().unwrap()), ["run_one"]);
    drop((one_store, two_store));

    // An older database: Ada's state in the schema the old mapping named.
    let ada_home = home.member("ada").unwrap();
    Store::open_at(&ada_home, &at, None)
        .unwrap()
        .admit(&turn("run_ada", None))
        .unwrap();
    let legacy = format!("lurkbot_user_ada_{:08x}", fnv1a32("ada"));
    pg.psql(
        "names",
        &format!("ALTER SCHEMA lurkbot_u_ada RENAME TO \"{legacy}\""),
    );
    let ada = Store::open_at(&ada_home, &at, None).unwrap();
    assert_eq!(
        ids(&ada.unfinished().unwrap()),
        ["run_ada"],
        "Ada's state kept"
    );
    let listed = pg.psql(
        "names",
        "SELECT string_agg(schema_name, ',') FROM information_schema.schemata \
         WHERE schema_name LIKE 'lurkbot%'",
    );
    let mut schemas: Vec<&str> = listed.split(',').collect();
    schemas.sort_unstable();
    let mut expected = vec![
        "lurkbot_u_ada".to_string(),
        format!("lurkbot_u_{one}"),
        format!("lurkbot_u_{two}"),
    ];
    expected.sort_unstable();
    assert_eq!(schemas, expected, "the old one renamed");
}

/// The low 32 bits of the old mapping's hash (FNV-1a of `lurkbot:<name>`).
fn fnv1a32(name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "lurkbot:".bytes().chain(name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash & 0xffff_ffff
}

/// Events published by one gateway reach the others' followers, in order, and never come
/// back to their publisher; nothing is shared on the embedded store.
#[test]
fn events_published_by_one_gateway_reach_the_others_in_order() {
    let pg = Postgres::start();
    let at = location(&pg.database("events"));
    let (_dir, home) = home();
    let a = Store::open_at(&home, &at, Some("gw-a")).unwrap();
    let b = Store::open_at(&home, &at, Some("gw-b")).unwrap();
    let follow = |store: &Store| {
        let (tx, rx) = std::sync::mpsc::channel();
        let follower = store
            .follow_events(move |batch| {
                for event in batch {
                    let _ = tx.send(event.payload);
                }
            })
            .unwrap()
            .expect("PostgreSQL shares events");
        (follower, rx)
    };
    let (_on_a, from_b) = follow(&a);
    let (_on_b, from_a) = follow(&b);
    a.publish_events(vec!["one".into(), "two".into()]).unwrap();
    a.publish_events(vec!["three".into()]).unwrap();
    b.publish_events(vec!["from b".into()]).unwrap();
    let got: Vec<String> = (0..3)
        .map(|_| from_a.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect();
    assert_eq!(got, ["one", "two", "three"]);
    assert_eq!(
        from_b.recv_timeout(Duration::from_secs(30)).unwrap(),
        "from b"
    );
    assert!(
        from_a.try_recv().is_err(),
        "b's own event is not delivered to b"
    );

    let (_plain_dir, plain) = crate::home();
    let embedded = Store::open(&plain).unwrap();
    assert!(!embedded.shares_events());
    assert!(embedded.follow_events(|_| {}).unwrap().is_none());
    embedded.publish_events(vec!["x".into()]).unwrap();
}
