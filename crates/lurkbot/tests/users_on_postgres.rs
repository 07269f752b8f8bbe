//! The users of gateways sharing one PostgreSQL database (Debian's 15 on loopback): the users
//! are the database's, not the home's file; a web UI sign-in made on one gateway signs in on
//! the other, and ends there when it ends; a token renewed through one closes the user's socket
//! on the other.

use std::io::{Read, Write};
use std::time::Duration;

use lurkbot_llm::fake::FakeProvider;
use lurkbot_test_support::postgres::Postgres;
use serde_json::json;

use crate::gateways_on_postgres::home_on;
use crate::nodes::client;
use crate::nothing_lost::{start_as, until};

/// One HTTP/1.1 request on `addr`: (status, the response's head, its body).
fn http(addr: &str, method: &str, path: &str, head: &str, body: &str) -> (u16, String, String) {
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return (0, String::new(), String::new());
    };
    let sent = write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{head}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut response = String::new();
    if sent.is_err() || stream.read_to_string(&mut response).is_err() {
        return (0, String::new(), String::new());
    }
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// Who `cookie` signs in on `addr`, as `GET /auth/me` says (`null`: nobody).
fn me(addr: &str, cookie: &str) -> serde_json::Value {
    let (_, _, body) = http(
        addr,
        "GET",
        "/auth/me",
        &format!("Cookie: {cookie}\r\n"),
        "",
    );
    serde_json::from_str::<serde_json::Value>(&body).unwrap_or_default()["signedIn"]["user"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_and_revocations_reach_every_gateway_on_postgres() {
    let pg = Postgres::start();
    let t = home_on(&pg, "users");
    assert_eq!(t.run(&["config", "set", "users.enabled", "true"]).status, 0);
    let added = t.run(&["users", "add", "alice"]);
    assert_eq!(added.status, 0, "{}", added.stderr);
    let alice_token = added.stdout.lines().last().unwrap().trim().to_string();
    assert!(alice_token.starts_with("lbu_"), "{}", added.stdout);
    let set = t.run_stdin(
        &["users", "passwd", "alice"],
        Some("alice's long password\n"),
    );
    assert_eq!(set.status, 0, "{}", set.stderr);
    // The users are the database's.
    assert!(!t.path("users/users.json").exists());
    let stored = pg.psql(
        "users",
        "SELECT body FROM documents WHERE name = 'users/users.json'",
    );
    assert!(
        stored.contains("\"alice\"") && stored.contains("$argon2id$"),
        "{stored}"
    );

    let fake = FakeProvider::start(vec![]).await;
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");

    // A cookie made on A signs in on B.
    let login = json!({"user": "alice", "password": "alice's long password"}).to_string();
    let (status, head, body) = http(&a.addr, "POST", "/auth/login", "", &login);
    assert_eq!(status, 200, "{body}");
    let cookie = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or_else(|| l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("no cookie in {head}"))
        .to_string();
    assert_eq!(me(&b.addr, &cookie), "alice");

    // Alice's socket on B closes when her token is renewed through A.
    let mut on_b = client(&b.ws, &alice_token).await;
    let mut owner = client(&a.ws, &t.gateway_token()).await;
    let renewed = owner
        .call("users.token", json!({"name": "alice"}), &mut Vec::new())
        .await;
    assert_eq!(renewed["ok"], true, "{renewed}");
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        while !on_b.frame().await.is_null() {}
    })
    .await;
    assert!(closed.is_ok(), "alice's socket on B stayed open");

    // Signing out on A ends the sign-in on B.
    let (status, _, _) = http(
        &a.addr,
        "POST",
        "/auth/logout",
        &format!("Cookie: {cookie}\r\n"),
        "",
    );
    assert_eq!(status, 200);
    until("B forgets the sign-in", || me(&b.addr, &cookie).is_null()).await;
    assert!(me(&a.addr, &cookie).is_null());
    drop((a, b));
}
