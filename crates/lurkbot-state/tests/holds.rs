//! Budget holds shared by every store on one state: a check sees the holds of every live
//! holder, never those of a dead one, and checks made at once — on three stores with their own
//! connections to one PostgreSQL database — never pass a cap together.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Barrier};

use lurkbot_core::Home;
use lurkbot_state::{Held, HeldSums, Location, StateUrl, Store};
use lurkbot_test_support::postgres::Postgres;

fn home() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    (dir, home)
}

const CALL: Held = Held {
    tokens: 1_000,
    micro_usd: 50,
};

/// A hold of [`CALL`] for `agent` when the holds stay within `cap` tokens with it.
fn hold_within(store: &Store, agent: &str, cap: u64) -> Option<String> {
    store
        .hold_budget(agent, CALL, None, move |sums: HeldSums, _| {
            if sums.all.tokens + CALL.tokens > cap {
                Err(sums.all.tokens)
            } else {
                Ok(())
            }
        })
        .unwrap()
        .ok()
}

#[test]
fn a_check_sees_every_live_holders_holds_and_not_a_dead_ones() {
    let (_dir, home) = home();
    let a = Store::open_as(&home, "gw-a").unwrap();
    let b = Store::open_as(&home, "gw-b").unwrap();
    let first = hold_within(&a, "main", 2_500).expect("the first fits");
    hold_within(&a, "work", 2_500).expect("the second fits");
    assert_eq!(hold_within(&b, "main", 2_500), None, "a third would pass");
    let sums = b.held_budget("main").unwrap();
    assert_eq!(
        sums.all,
        Held {
            tokens: 2_000,
            micro_usd: 100
        }
    );
    assert_eq!(
        sums.agent,
        Held {
            tokens: 1_000,
            micro_usd: 50
        }
    );
    // A call that ended gives its hold back.
    a.release_budget(&first).unwrap();
    assert_eq!(b.held_budget("main").unwrap().all.tokens, 1_000);
    // A gateway that died holds nothing (its lock file is free).
    drop(a);
    assert_eq!(b.held_budget("main").unwrap(), HeldSums::default());
    hold_within(&b, "main", 2_500).expect("room again");
}

#[test]
fn a_store_from_before_holds_is_brought_up_to_date() {
    let (_dir, home) = home();
    drop(Store::open(&home).unwrap());
    let path = home.join(lurkbot_state::STATE_FILE);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE holds; DROP TABLE attempts; PRAGMA user_version = 2;")
        .unwrap();
    drop(conn);
    let store = Store::open(&home).unwrap();
    assert_eq!(store.schema_version().unwrap(), 3);
    hold_within(&store, "main", 1_000).expect("holds work");
}

/// 20 checks at once over three stores on one database, each call 1,000 tokens under a cap
/// of 3,500: exactly three hold, whichever store they ran on (fails without the write lock
/// around the sum and the insert, or with holds counted per store).
#[test]
fn twenty_checks_at_once_over_three_gateways_never_pass_the_cap() {
    let pg = Postgres::start();
    let at = Location::Postgres(Box::new(StateUrl::parse(&pg.database("holds")).unwrap()));
    let (_dir, home) = home();
    let stores: Vec<Store> = ["gw-a", "gw-b", "gw-c"]
        .iter()
        .map(|id| Store::open_at(&home, &at, Some(id)).unwrap())
        .collect();
    let start = Arc::new(Barrier::new(20));
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let (store, start) = (stores[i % 3].clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                hold_within(&store, "main", 3_500)
            })
        })
        .collect();
    let held: Vec<String> = calls
        .into_iter()
        .filter_map(|c| c.join().unwrap())
        .collect();
    assert_eq!(held.len(), 3, "{held:?}");
    assert_eq!(pg.psql("holds", "SELECT sum(tokens) FROM holds"), "3000");
    // The gateway holding some dies: a check on another no longer counts its holds.
    let mut stores = stores;
    let c = stores.pop().unwrap();
    let c_held = pg.psql("holds", "SELECT count(*) FROM holds WHERE owner = 'gw-c'");
    drop(c);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let expected = 3_000 - 1_000 * c_held.parse::<u64>().unwrap();
    while stores[0].held_budget("main").unwrap().all.tokens != expected {
        assert!(
            std::time::Instant::now() < deadline,
            "gw-c's holds still count"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
