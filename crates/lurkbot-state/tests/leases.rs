//! Leases on the embedded store: an unended turn belongs to the gateway that admitted it
//! while that gateway lives, and is taken over once — at once — when it is gone.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use lurkbot_core::Home;
use lurkbot_state::{LEASE_TTL_MS, NewTurn, StateError, Store};
use serde_json::json;

fn home() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    (dir, home)
}

fn turn(id: &str) -> NewTurn {
    NewTurn {
        id: id.into(),
        source: None,
        session: "agent:main:main".into(),
        origin: json!({"kind": "client"}),
        message: "hello".into(),
        options: json!({}),
    }
}

fn ids(turns: &[lurkbot_state::TurnRecord]) -> Vec<&str> {
    turns.iter().map(|t| t.id.as_str()).collect()
}

#[test]
fn a_live_gateways_turns_are_its_own_and_a_gone_ones_are_taken_over_once() {
    let (_dir, home) = home();
    let first = Store::open_as(&home, "first").unwrap();
    first.admit(&turn("run_a")).unwrap();
    first.begin("run_a").unwrap();
    first.admit(&turn("run_b")).unwrap();
    // The admitting gateway does not resume its own turns: they run there.
    assert!(first.claim_unfinished().unwrap().is_empty());
    let leases = first.leases().unwrap();
    assert_eq!(leases.len(), 2);
    assert!(leases.iter().all(|l| l.owner == "first"));
    assert!(leases[0].expires_ms >= lurkbot_core::now_ms() + LEASE_TTL_MS - 1_000);

    // A second gateway on the same home leaves them alone while the first lives, however
    // late its renewals are.
    let second = Store::open_as(&home, "second").unwrap();
    assert!(second.claim_unfinished().unwrap().is_empty());

    // The first gone (its process dead: its lock released), the second takes both, once.
    drop(first);
    let taken = second.claim_unfinished().unwrap();
    assert_eq!(ids(&taken), ["run_a", "run_b"], "oldest first");
    assert!(second.claim_unfinished().unwrap().is_empty(), "taken once");
    let third = Store::open_as(&home, "third").unwrap();
    assert!(
        third.claim_unfinished().unwrap().is_empty(),
        "the second holds them now"
    );
    assert!(second.leases().unwrap().iter().all(|l| l.owner == "second"));

    // An ended turn gives its lease back.
    second.finish("run_a", Ok("done"), &[]).unwrap();
    assert_eq!(ids(&second.unfinished().unwrap()), ["run_b"]);
    assert_eq!(second.leases().unwrap().len(), 1);
}

#[test]
fn a_stopping_gateway_gives_its_turns_back_at_once() {
    let (_dir, home) = home();
    let first = Store::open_as(&home, "first").unwrap();
    first.admit(&turn("run_a")).unwrap();
    let second = Store::open_as(&home, "second").unwrap();
    assert!(second.claim_unfinished().unwrap().is_empty());
    assert_eq!(first.release_leases().unwrap(), 1);
    assert_eq!(ids(&second.claim_unfinished().unwrap()), ["run_a"]);
    // Renewing moves only the renewing owner's leases.
    assert_eq!(second.renew_leases().unwrap(), 1);
    assert_eq!(first.renew_leases().unwrap(), 0);
}

#[test]
fn a_withdrawn_turn_gives_its_lease_back() {
    let (_dir, home) = home();
    let store = Store::open(&home).unwrap();
    store.admit(&turn("run_a")).unwrap();
    assert!(store.withdraw("run_a").unwrap());
    assert!(store.leases().unwrap().is_empty());
}

#[test]
fn gateway_ids_are_checked_and_not_shared() {
    let (_dir, home) = home();
    for bad in ["", "../x", ".hidden", "a b", "ü"] {
        let err = Store::open_as(&home, bad).unwrap_err();
        assert!(matches!(err, StateError::BadOwner(_)), "{bad}: {err}");
    }
    let first = Store::open_as(&home, "same").unwrap();
    first.admit(&turn("run_a")).unwrap();
    let err = Store::open_as(&home, "same").unwrap_err();
    assert!(matches!(err, StateError::OwnerTaken(_)), "{err}");
    assert!(err.to_string().contains("[gateway] id"), "{err}");
    drop(first);
    // Back under its id after a crash, a gateway takes over what it left.
    let again = Store::open_as(&home, "same").unwrap();
    assert_eq!(ids(&again.claim_unfinished().unwrap()), ["run_a"]);
    assert!(again.claim_unfinished().unwrap().is_empty());
    // The default id names this machine and differs per store.
    let a = Store::open(&home).unwrap();
    let b = Store::open(&home).unwrap();
    assert_ne!(a.owner(), b.owner());
}

#[test]
fn a_store_from_before_leases_is_brought_up_to_date() {
    let (_dir, home) = home();
    drop(Store::open(&home).unwrap());
    let path = home.join(lurkbot_state::STATE_FILE);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE leases; PRAGMA user_version = 1;")
        .unwrap();
    drop(conn);
    let store = Store::open(&home).unwrap();
    store.admit(&turn("run_a")).unwrap();
    assert_eq!(store.leases().unwrap().len(), 1);
}
