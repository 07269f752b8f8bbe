//! Sign-in attempts counted in the store: before a password is checked, with the check of the
//! counts in one transaction — so attempts made at once on three gateways sharing one
//! PostgreSQL database never pass the limit together.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Barrier};

use lurkbot_core::Home;
use lurkbot_state::{Location, StateUrl, Store};
use lurkbot_test_support::postgres::Postgres;

const MINUTE: u64 = 60_000;
/// The clock the attempts are counted by (2026-11-18).
const T0: u64 = 1_795_000_000_000;

fn keys(name: &str, addr: &str) -> Vec<String> {
    vec![format!("name:{name}"), format!("addr:{addr}")]
}

#[test]
fn five_attempts_a_minute_per_name_and_per_address_and_a_success_is_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    let store = Store::open(&home).unwrap();
    for _ in 0..4 {
        store
            .begin_attempt(&keys("ann", "10.0.0.1"), 5, MINUTE, T0)
            .unwrap()
            .unwrap();
    }
    // A right password is forgotten: it leaves room for another.
    let right = store
        .begin_attempt(&keys("ann", "10.0.0.1"), 5, MINUTE, T0)
        .unwrap()
        .unwrap();
    store.attempt_succeeded(&right).unwrap();
    store
        .begin_attempt(&keys("ann", "10.0.0.1"), 5, MINUTE, T0)
        .unwrap()
        .unwrap();
    // Five wrong ones: the name is refused from any address, the address for any name.
    let wait = store
        .begin_attempt(&keys("ann", "10.0.0.2"), 5, MINUTE, T0)
        .unwrap()
        .unwrap_err();
    assert_eq!(wait, 60, "the oldest attempt leaves the window in a minute");
    assert!(
        store
            .begin_attempt(&keys("bob", "10.0.0.1"), 5, MINUTE, T0)
            .unwrap()
            .is_err()
    );
    store
        .begin_attempt(&keys("bob", "10.0.0.2"), 5, MINUTE, T0)
        .unwrap()
        .unwrap();
    // Half a minute on, the name is still refused; a minute on, the attempts no longer count.
    let later = store
        .begin_attempt(&keys("ann", "10.0.0.2"), 5, MINUTE, T0 + MINUTE / 2)
        .unwrap()
        .unwrap_err();
    assert_eq!(later, 30);
    store
        .begin_attempt(&keys("ann", "10.0.0.1"), 5, MINUTE, T0 + MINUTE + 1)
        .unwrap()
        .unwrap();
}

/// 20 attempts at once for one name over three stores on one database: exactly five are let
/// through to the password check (fails without the count and the insert in one locked
/// transaction).
#[test]
fn twenty_attempts_at_once_over_three_gateways_pass_the_limit_never() {
    let pg = Postgres::start();
    let at = Location::Postgres(Box::new(StateUrl::parse(&pg.database("attempts")).unwrap()));
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    let stores: Vec<Store> = ["gw-a", "gw-b", "gw-c"]
        .iter()
        .map(|id| Store::open_at(&home, &at, Some(id)).unwrap())
        .collect();
    let start = Arc::new(Barrier::new(20));
    let attempts: Vec<_> = (0..20)
        .map(|i| {
            let (store, start) = (stores[i % 3].clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let addr = format!("10.0.0.{i}");
                store
                    .begin_attempt(&keys("ann", &addr), 5, MINUTE, T0)
                    .unwrap()
            })
        })
        .collect();
    let checked = attempts
        .into_iter()
        .filter_map(|a| a.join().unwrap().ok())
        .count();
    assert_eq!(checked, 5);
    assert_eq!(
        pg.psql(
            "attempts",
            "SELECT count(*) FROM attempts WHERE key = 'name:ann'"
        ),
        "5"
    );
}
