//! The embedded store as the gateway uses it: a source id admitted once, a turn's life, the
//! outbox's, what survives reopening, and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use lurkbot_core::Home;
use lurkbot_state::{
    Admitted, NewOutgoing, NewTurn, OutgoingState, STATE_FILE, StateError, Store, TurnState,
};
use serde_json::json;

fn home() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    (dir, home)
}

fn turn(id: &str, source: Option<&str>) -> NewTurn {
    NewTurn {
        id: id.into(),
        source: source.map(str::to_string),
        session: "agent:main:main".into(),
        origin: json!({"kind": "channel", "channel": "telegram", "chat": "42"}),
        message: "hello".into(),
        options: json!({}),
    }
}

fn reply(chat: &str, body: &str) -> NewOutgoing {
    NewOutgoing {
        channel: "telegram".into(),
        chat: chat.into(),
        reply_to: Some("7".into()),
        kind: "text".into(),
        body: body.into(),
    }
}

#[test]
fn one_source_id_starts_one_turn() {
    let (_dir, home) = home();
    let store = Store::open(&home).unwrap();
    assert_eq!(
        store.admit(&turn("run_a", Some("telegram:42:7"))).unwrap(),
        Admitted::New
    );
    let Admitted::Known(known) = store.admit(&turn("run_b", Some("telegram:42:7"))).unwrap() else {
        panic!("the second admission of a source id finds the first turn");
    };
    assert_eq!(known.id, "run_a");
    assert!(store.turn("run_b").unwrap().is_none(), "no second turn");
    // A turn never started can be taken back, and its source id admitted again.
    assert!(store.withdraw("run_a").unwrap());
    assert_eq!(
        store.admit(&turn("run_b", Some("telegram:42:7"))).unwrap(),
        Admitted::New
    );
    store.begin("run_b").unwrap();
    assert!(!store.withdraw("run_b").unwrap(), "a started turn stays");
    // Turns without a source id are all new.
    assert_eq!(store.admit(&turn("run_c", None)).unwrap(), Admitted::New);
    assert_eq!(store.admit(&turn("run_d", None)).unwrap(), Admitted::New);
    assert_eq!(store.unfinished().unwrap().len(), 3);
}

#[test]
fn a_turn_is_journalled_and_survives_reopening() {
    let (_dir, home) = home();
    {
        let store = Store::open(&home).unwrap();
        store.admit(&turn("run_a", Some("api:key-1"))).unwrap();
        assert_eq!(store.begin("run_a").unwrap(), 1);
        store.set_base("run_a", 120).unwrap();
        store.set_step("run_a", 1, Some("call_1 read")).unwrap();
    }
    let store = Store::open(&home).unwrap();
    let open = store.unfinished().unwrap();
    assert_eq!(open.len(), 1);
    let t = &open[0];
    assert_eq!(
        (t.state, t.base, t.step, t.tool.as_deref()),
        (TurnState::Running, Some(120), 1, Some("call_1 read"))
    );
    assert_eq!(t.origin["chat"], "42");
    // A resume counts as a start, and keeps the base of the first.
    assert_eq!(store.begin("run_a").unwrap(), 2);
    store.set_base("run_a", 999).unwrap();
    assert_eq!(store.turn("run_a").unwrap().unwrap().base, Some(120));
    let out = store
        .finish("run_a", Ok("the answer"), &[reply("42", "the answer")])
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].turn.as_deref(), Some("run_a"));
    assert!(store.unfinished().unwrap().is_empty());
    let done = store.turn_by_source("api:key-1").unwrap().unwrap();
    assert_eq!(
        (done.state, done.reply.as_deref(), done.tool),
        (TurnState::Done, Some("the answer"), None)
    );
    assert_eq!(store.turn_counts().unwrap(), [0, 0, 1, 0]);
    store.finish("run_x", Err("nope"), &[]).unwrap();
    assert!(matches!(
        store.begin("run_missing"),
        Err(StateError::NotFound { .. })
    ));
}

#[test]
fn the_outbox_keeps_pending_sent_and_failed_messages() {
    let (_dir, home) = home();
    let store = Store::open(&home).unwrap();
    let a = store.enqueue(None, &reply("42", "one")).unwrap();
    let b = store.enqueue(None, &reply("43", "two")).unwrap();
    let c = store.enqueue(None, &reply("44", "three")).unwrap();
    assert_ne!(a.id, b.id);
    assert!(a.id.starts_with("out_") && a.id.len() == 20, "{}", a.id);
    assert_eq!(store.outbox_counts().unwrap(), (3, 0));
    store.piece_sent(&a.id, 1, Some("1001")).unwrap();
    store.mark_sent(&a.id).unwrap();
    store
        .mark_failed(&b.id, "Forbidden: bot was blocked by the user", true)
        .unwrap();
    store
        .mark_failed(&c.id, "502 from the platform", false)
        .unwrap();
    assert_eq!(store.outbox_counts().unwrap(), (1, 1));
    let pending = store.outbox(&[OutgoingState::Pending], 10).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].attempts, pending[0].error.as_deref()),
        (1, Some("502 from the platform"))
    );
    let sent = store.outgoing(&a.id).unwrap().unwrap();
    assert_eq!(
        (sent.state, sent.pieces_sent, sent.platform_id.as_deref()),
        (OutgoingState::Sent, 1, Some("1001"))
    );
    let failed = store.outbox(&[OutgoingState::Failed], 10).unwrap();
    assert_eq!(failed[0].id, b.id);
    assert_eq!(store.outbox(&[], 10).unwrap().len(), 3);
    // A failed message can be put back in line; a sent one cannot.
    store.retry_outgoing(&b.id).unwrap();
    assert_eq!(store.outbox_counts().unwrap(), (2, 0));
    assert!(matches!(
        store.retry_outgoing(&a.id),
        Err(StateError::NotFound { .. })
    ));
    assert!(matches!(
        store.mark_sent("out_nothing"),
        Err(StateError::NotFound { .. })
    ));
    // Sent messages are pruned; pending ones never.
    assert_eq!(store.prune_outbox(u64::MAX).unwrap(), 1);
    assert_eq!(store.outbox(&[], 10).unwrap().len(), 2);
}

#[cfg(unix)]
#[test]
fn the_store_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, home) = home();
    let store = Store::open(&home).unwrap();
    store.admit(&turn("run_a", None)).unwrap();
    let file = dir.path().join(STATE_FILE);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let wal = dir.path().join(format!("{STATE_FILE}-wal"));
    assert_eq!(
        mode(&wal),
        0o600,
        "SQLite's WAL file follows the database's mode"
    );
}

#[test]
fn a_store_from_a_newer_lurkbot_is_refused() {
    let (dir, home) = home();
    drop(Store::open(&home).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join(STATE_FILE)).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = Store::open(&home).unwrap_err();
    assert!(matches!(err, StateError::Newer { found: 99, .. }), "{err}");
    assert!(err.to_string().contains("upgrade LurkBot"), "{err}");
}

#[test]
fn an_inbound_message_is_recorded_once_and_handled_by_its_turn() {
    let (_dir, home) = home();
    let store = Store::open(&home).unwrap();
    let payload = json!({"chat": "42", "text": "hi"});
    assert!(
        store
            .receive("telegram:42:7", "telegram", &payload)
            .unwrap()
    );
    assert!(
        !store
            .receive("telegram:42:7", "telegram", &payload)
            .unwrap(),
        "served again after a crash: not recorded twice"
    );
    assert!(
        store
            .receive("telegram:42:8", "telegram", &payload)
            .unwrap()
    );
    assert!(store.receive("matrix:!r:$e", "matrix", &payload).unwrap());
    let open = store.unhandled("telegram").unwrap();
    assert_eq!(open.len(), 2);
    assert_eq!(
        (open[0].source.as_str(), &open[0].payload),
        ("telegram:42:7", &payload)
    );
    // Admitting its turn handles it; a message not answered is marked so.
    store.admit(&turn("run_a", Some("telegram:42:7"))).unwrap();
    store.handled("telegram:42:8", "ignored").unwrap();
    assert!(store.unhandled("telegram").unwrap().is_empty());
    assert_eq!(store.unhandled("matrix").unwrap().len(), 1);
    assert_eq!(store.prune_inbound(u64::MAX).unwrap(), 2);
}
