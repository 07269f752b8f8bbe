//! Documents and logs in the store: an edit reads, changes and writes a document with its log
//! lines in one transaction, so edits made at once on three stores sharing one PostgreSQL
//! database lose none; a failed edit writes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Barrier};

use lurkbot_core::Home;
use lurkbot_state::{Edit, Location, StateUrl, Store};
use lurkbot_test_support::postgres::Postgres;

/// Adds one to the number document `counter` holds, logging the new value.
fn add_one(store: &Store) -> u64 {
    store
        .edit_document("counter", |body| {
            let n: u64 = body
                .as_deref()
                .unwrap_or("0")
                .parse()
                .map_err(|_| "not a number")?;
            Ok::<_, &str>(Edit {
                body: Some((n + 1).to_string()),
                lines: vec![("counted".into(), (n + 1).to_string())],
                value: n + 1,
            })
        })
        .unwrap()
        .unwrap()
}

/// A list of names kept as one JSON value.
fn add_name(store: &Store, name: &'static str) -> Result<usize, String> {
    store
        .edit_value(
            "names",
            |body| {
                body.map_or(Ok(Vec::new()), |b| {
                    serde_json::from_str::<Vec<String>>(&b).map_err(|e| e.to_string())
                })
            },
            move |names| {
                if names.iter().any(|n| n == name) {
                    return Err(format!("{name} is there already"));
                }
                names.push(name.to_string());
                Ok(names.len())
            },
            |names| serde_json::to_string(names).map_err(|e| e.to_string()),
        )
        .unwrap()
        .map(|(count, _)| count)
}

#[test]
fn a_value_edit_parses_changes_and_writes_or_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    let store = Store::open(&home).unwrap();
    assert_eq!(add_name(&store, "ada"), Ok(1));
    assert_eq!(add_name(&store, "bob"), Ok(2));
    assert_eq!(
        store.document("names").unwrap().as_deref(),
        Some(r#"["ada","bob"]"#)
    );
    // A refused change writes nothing; neither does a body that does not parse.
    assert_eq!(add_name(&store, "ada"), Err("ada is there already".into()));
    assert_eq!(
        store.document("names").unwrap().as_deref(),
        Some(r#"["ada","bob"]"#)
    );
    store
        .edit_document("names", |_| {
            Ok::<_, ()>(Edit::replace("not json".into(), ()))
        })
        .unwrap()
        .unwrap();
    assert!(add_name(&store, "cy").is_err());
    assert_eq!(
        store.document("names").unwrap().as_deref(),
        Some("not json")
    );
}

#[test]
fn an_edit_writes_its_document_and_lines_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    let store = Store::open(&home).unwrap();
    assert_eq!(store.document("counter").unwrap(), None);
    assert_eq!(add_one(&store), 1);
    assert_eq!(add_one(&store), 2);
    assert_eq!(store.document("counter").unwrap().as_deref(), Some("2"));
    assert_eq!(store.log("counted").unwrap(), ["1", "2"]);
    // An edit that fails leaves the document and the log as they were.
    let failed = store
        .edit_document("counter", |_| Err::<Edit<()>, _>("refused"))
        .unwrap();
    assert_eq!(failed, Err("refused"));
    assert_eq!(store.document("counter").unwrap().as_deref(), Some("2"));
    store.append_log("counted", "by hand").unwrap();
    assert_eq!(store.log("counted").unwrap(), ["1", "2", "by hand"]);
    assert!(store.log("other").unwrap().is_empty());
    // A log measures as its file would: each line and a newline.
    store
        .append_log_lines("t.jsonl", vec!["ab".into(), "cdé".into()], false)
        .unwrap();
    assert_eq!(store.log_len("t.jsonl").unwrap(), 3 + 5);
    assert_eq!(store.log_since("t.jsonl", 3).unwrap(), ["cdé"]);
    assert_eq!(store.log_since("t.jsonl", 0).unwrap(), ["ab", "cdé"]);
    assert!(store.log_since("t.jsonl", 8).unwrap().is_empty());
    store.delete_log("t.jsonl").unwrap();
    assert_eq!(store.log_len("t.jsonl").unwrap(), 0);
}

/// 30 edits at once over three stores on one database: the counter ends at 30 and its log
/// holds 1 to 30, each once (fails without the edit's read and write in one locked
/// transaction: edits made at once would read the same number).
#[test]
fn thirty_edits_at_once_over_three_gateways_lose_none() {
    let pg = Postgres::start();
    let at = Location::Postgres(Box::new(StateUrl::parse(&pg.database("docs")).unwrap()));
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    let stores: Vec<Store> = ["gw-a", "gw-b", "gw-c"]
        .iter()
        .map(|id| Store::open_at(&home, &at, Some(id)).unwrap())
        .collect();
    let start = Arc::new(Barrier::new(30));
    let edits: Vec<_> = (0..30)
        .map(|i| {
            let (store, start) = (stores[i % 3].clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                add_one(&store)
            })
        })
        .collect();
    let mut seen: Vec<u64> = edits.into_iter().map(|e| e.join().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (1..=30).collect::<Vec<u64>>());
    assert_eq!(
        stores[1].document("counter").unwrap().as_deref(),
        Some("30")
    );
    let mut logged: Vec<u64> = stores[2]
        .log("counted")
        .unwrap()
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    logged.sort_unstable();
    assert_eq!(logged, (1..=30).collect::<Vec<u64>>());
}

/// Documents under a prefix are listed by name (and only those), on both backends; a deleted
/// one is gone.
#[test]
fn documents_under_a_prefix_are_listed_and_deleted() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    let url = StateUrl::parse(&pg.database("prefix")).unwrap();
    for store in [
        Store::open(&home).unwrap(),
        Store::open_at(&home, &Location::Postgres(Box::new(url)), None).unwrap(),
    ] {
        for (name, body) in [
            ("a/2", "two"),
            ("a/1", "one"),
            ("ab", "not under a/"),
            ("b/1", "b"),
        ] {
            store.put_document(name, body).unwrap();
        }
        let under: Vec<(String, String)> = store.documents_under("a/").unwrap();
        assert_eq!(
            under,
            [
                ("a/1".to_string(), "one".to_string()),
                ("a/2".into(), "two".into())
            ],
            "{}",
            store.backend()
        );
        store.delete_document("a/1").unwrap();
        assert_eq!(store.documents_under("a/").unwrap().len(), 1);
        assert_eq!(store.document("a/1").unwrap(), None);
        store.delete_document("a/1").unwrap();
    }
}
