//! Users on one gateway (ARCHITECTURE.md §6.2): two users through every surface — the
//! WebSocket methods, events, the terminal, the OpenAI-compatible API, usage and cron — each
//! seeing only their own; the admin's methods refused to users; a renewed token closing an open
//! socket (sign-in: `users_sign_in.rs`; the agent's tools, budgets and skills: `users_agent.rs`).

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN};

pub(crate) const USERS_ON: &str = "[users]\nenabled = true\n";

pub(crate) fn tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Adds `name` through the owner's connection; their token.
pub(crate) async fn add(owner: &mut Client, name: &str) -> String {
    let added = owner.request("users.add", json!({"name": name})).await;
    assert_eq!(added["ok"], true, "{added}");
    added["payload"]["token"].as_str().unwrap().to_string()
}

/// Runs one chat turn on `c` and waits for its final text.
pub(crate) async fn turn(c: &mut Client, message: &str) -> String {
    let sent = c.request("chat.send", json!({"message": message})).await;
    assert_eq!(sent["ok"], true, "{sent}");
    let fin = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    fin["payload"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn two_users_each_see_only_their_own() {
    let mut gw = Gateway::start(
        USERS_ON,
        vec![Step::text("alice-reply-one"), Step::text("bob-reply-one")],
    )
    .await;
    let (mut owner, hello) = Client::connect(&gw, TOKEN).await;
    assert_eq!(hello["signedIn"], json!({"user": null, "admin": true}));
    let alice_token = add(&mut owner, "alice").await;
    let bob_token = add(&mut owner, "bob").await;
    assert!(alice_token.starts_with("lbu_") && alice_token != bob_token);
    // Each has a home of their own with the layout, and no config of their own.
    assert!(gw.home.join("users/alice/workspace/AGENTS.md").is_file());
    assert!(!gw.home.join("users/alice/config.toml").exists());

    let (mut alice, hello) = Client::connect(&gw, &alice_token).await;
    assert_eq!(hello["signedIn"], json!({"user": "alice", "admin": false}));
    let (mut bob, _) = Client::connect(&gw, &bob_token).await;

    // Alice talks; her turn is in her home, and no event of it reaches Bob's socket.
    assert_eq!(
        turn(&mut alice, "alice-secret-question").await,
        "alice-reply-one"
    );
    let alice_sessions = alice.request("sessions.list", json!({})).await;
    assert!(
        alice_sessions.to_string().contains("agent:main:main"),
        "{alice_sessions}"
    );
    let alice_history = alice.request("chat.history", json!({})).await.to_string();
    assert!(alice_history.contains("alice-secret-question"));
    let bob_health = bob.request("health", json!({})).await;
    assert_eq!(bob_health["ok"], true);
    assert!(
        !bob.events.iter().any(|e| e.to_string().contains("alice")),
        "an event of Alice's turn reached Bob: {:?}",
        bob.events
    );
    // Bob's own view: none of Alice's sessions or history, even with her session key.
    let bob_sessions = bob.request("sessions.list", json!({})).await.to_string();
    assert!(!bob_sessions.contains("alice"), "{bob_sessions}");
    let bob_history = bob
        .request("chat.history", json!({"sessionKey": "agent:main:main"}))
        .await
        .to_string();
    assert!(
        !bob_history.contains("alice-secret-question"),
        "{bob_history}"
    );
    let deleted = bob
        .request("sessions.delete", json!({"sessionKey": "agent:main:main"}))
        .await;
    assert_ne!(deleted["payload"]["deleted"], true, "{deleted}");
    let still = alice.request("chat.history", json!({})).await.to_string();
    assert!(
        still.contains("alice-secret-question"),
        "Bob's delete reached Alice: {still}"
    );
    // Bob's turn: the model is sent Bob's history only.
    gw.fake.record(true);
    assert_eq!(turn(&mut bob, "bob-question").await, "bob-reply-one");
    let sent = gw.fake.requests();
    let body = sent.last().unwrap().body.to_string();
    assert!(body.contains("bob-question") && !body.contains("alice-secret-question"));

    // The terminal is confined to each user's home: a path into Alice's, or a link to it.
    std::fs::write(
        gw.home.join("users/alice/workspace/diary.md"),
        "alice's diary",
    )
    .unwrap();
    for src in [
        "../alice/workspace",
        "../../users/alice/workspace/diary.md",
        "workspace/peek",
    ] {
        if src == "workspace/peek" {
            std::os::unix::fs::symlink(
                gw.home.join("users/alice/workspace"),
                gw.home.join("users/bob/workspace/peek"),
            )
            .unwrap();
        }
        let exec = bob
            .request(
                "terminal.exec",
                json!({"command": format!("zip create --src {src} --out stolen-{}.zip --confirm", src.len())}),
            )
            .await;
        assert_eq!(exec["ok"], true, "{exec}");
        assert_eq!(
            exec["payload"]["error_code"], "PathEscapesAgentsRoot",
            "{src}: {exec}"
        );
        assert!(!exec.to_string().contains("alice's diary"));
    }
    let listing = std::fs::read_dir(gw.home.join("users/bob/artifacts"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        .unwrap_or_default();
    assert!(
        !listing
            .iter()
            .any(|n| n.to_string_lossy().contains("stolen")),
        "{listing:?}"
    );
    // Bob's terminal works in Bob's home, audited there; Alice's files behind the link are
    // not in his archive (entry names are stored as written).
    let own = bob
        .request(
            "terminal.exec",
            json!({"command": "zip create --src workspace --out mine.zip --confirm"}),
        )
        .await;
    assert_eq!(own["payload"]["exit_code"], 0, "{own}");
    assert_eq!(
        own["payload"]["result"]["skipped"]["unsafe_link"], 1,
        "{own}"
    );
    let bytes = std::fs::read(gw.home.join("users/bob/mine.zip")).unwrap();
    let holds = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(holds(b"AGENTS.md") && !holds(b"diary.md"));
    let audits = |who: &str| {
        std::fs::read_dir(
            gw.home
                .join(&format!("users/{who}/artifacts/terminal_exec/runs")),
        )
        .map(|d| d.count())
        .unwrap_or(0)
    };
    assert!(audits("bob") >= 4 && audits("alice") == 0);
    // The admin's own tools cannot read a user's home either: users/ is off limits.
    let peek = owner
        .request(
            "terminal.exec",
            json!({"command": "zip create --src users/alice/sessions --out peek.zip --confirm"}),
        )
        .await;
    assert_eq!(peek["payload"]["error_code"], "PermissionDenied", "{peek}");

    // Usage and cron are per user.
    let alice_usage = alice.request("usage.summary", json!({})).await;
    let bob_usage = bob.request("usage.summary", json!({})).await;
    assert_eq!(alice_usage["ok"], true, "{alice_usage}");
    assert_eq!(alice_usage["payload"]["total"]["calls"], 1, "{alice_usage}");
    assert_eq!(bob_usage["payload"]["total"]["calls"], 1, "{bob_usage}");
    let job = alice
        .request(
            "cron.add",
            json!({"name": "alice-job", "schedule": {"kind": "every", "everyMs": 3_600_000},
                "payload": {"kind": "agentTurn", "message": "hi"}}),
        )
        .await;
    assert_eq!(job["ok"], true, "{job}");
    let bobs_jobs = bob.request("cron.list", json!({})).await.to_string();
    assert!(!bobs_jobs.contains("alice-job"), "{bobs_jobs}");
    let alices_jobs = alice.request("cron.list", json!({})).await.to_string();
    assert!(alices_jobs.contains("alice-job"));

    // What is the admin's stays the admin's.
    for method in [
        "users.list",
        "logs.tail",
        "gateway.reload",
        "device.pair.list",
        "setup.model",
        "channels.pairing.deny",
    ] {
        let refused = bob.request(method, json!({})).await;
        assert_eq!(refused["error"]["code"], "FORBIDDEN", "{method}: {refused}");
    }
    let listed = owner.request("users.list", json!({})).await;
    let names: Vec<&str> = listed["payload"]["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["name"].as_str())
        .collect();
    assert_eq!(names, ["alice", "bob"]);
    assert!(!listed.to_string().contains("tokenSha256"), "{listed}");

    // A new token for Bob closes his open socket at once and stops the old token.
    let renewed = owner.request("users.token", json!({"name": "bob"})).await;
    let new_token = renewed["payload"]["token"].as_str().unwrap().to_string();
    assert_eq!(bob.close_code().await, Some(4001));
    let mut stale = Client::open(&gw).await;
    let _challenge = stale.recv().await;
    let refused = stale
        .request("connect", crate::common::connect_params(&bob_token))
        .await;
    assert_eq!(refused["error"]["code"], "UNAUTHORIZED", "{refused}");
    let (mut bob, _) = Client::connect(&gw, &new_token).await;
    assert!(
        bob.request("sessions.list", json!({}))
            .await
            .to_string()
            .contains("agent:main:main")
    );
    // Alice is untouched by Bob's renewal.
    assert_eq!(alice.request("health", json!({})).await["ok"], true);
    // Removing Alice closes her socket; her home is kept.
    let removed = owner
        .request("users.remove", json!({"name": "alice"}))
        .await;
    assert_eq!(removed["ok"], true, "{removed}");
    assert_eq!(alice.close_code().await, Some(4001));
    assert!(gw.home.join("users/alice/workspace/diary.md").is_file());
    gw.stop().await;
}

#[tokio::test]
async fn the_openai_api_serves_each_user_their_own_sessions() {
    tls_provider();
    let mut gw = Gateway::start(
        USERS_ON,
        vec![Step::text("first answer"), Step::text("second answer")],
    )
    .await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let alice = add(&mut owner, "alice").await;
    let bob = add(&mut owner, "bob").await;
    let http = reqwest::Client::new();
    let ask = |token: String, text: &'static str| {
        let http = http.clone();
        let url = gw.url("/v1/chat/completions");
        async move {
            http.post(url)
                .bearer_auth(token)
                .header("x-lurkbot-session", "agent:main:dm:api:shared-name")
                .header("content-type", "application/json")
                .body(
                    json!({"model": "lurkbot", "messages": [{"role": "user", "content": text}]})
                        .to_string(),
                )
                .send()
                .await
                .unwrap()
        }
    };
    gw.fake.record(true);
    let first = ask(alice.clone(), "alice-api-secret").await;
    assert_eq!(first.status(), 200);
    let second = ask(bob.clone(), "bob-api-question").await;
    assert_eq!(second.status(), 200);
    let sent = gw.fake.requests();
    let bobs = sent.last().unwrap().body.to_string();
    assert!(
        bobs.contains("bob-api-question") && !bobs.contains("alice-api-secret"),
        "{bobs}"
    );
    assert!(gw.home.join("users/alice/sessions").is_dir());
    let alice_files = std::fs::read_dir(gw.home.join("users/alice/sessions/main"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(alice_files.contains("alice-api-secret") && !alice_files.contains("bob-api-question"));
    // A wrong key is refused; a missing one too, without counting.
    let wrong = ask("lbu_0000".into(), "x").await;
    assert_eq!(wrong.status(), 401);
    let models = http
        .get(gw.url("/v1/models"))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    gw.stop().await;
}

#[tokio::test]
async fn without_users_the_gateway_is_as_before() {
    tls_provider();
    let mut gw = Gateway::start("", vec![]).await;
    let (mut owner, hello) = Client::connect(&gw, TOKEN).await;
    assert!(hello.get("signedIn").is_none(), "{hello}");
    let listed = owner.request("users.list", json!({})).await;
    assert_eq!(listed["error"]["code"], "UNAVAILABLE");
    let login = reqwest::Client::new()
        .post(gw.url("/auth/login"))
        .header("content-type", "application/json")
        .body(json!({"user": "a", "password": "bbbbbbbb"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 404);
    // A user token means nothing here.
    let mut c = Client::open(&gw).await;
    let _challenge = c.recv().await;
    let refused = c
        .request(
            "connect",
            crate::common::connect_params("lbu_0123456789abcdef"),
        )
        .await;
    assert_eq!(refused["error"]["code"], "UNAUTHORIZED");
    gw.stop().await;
}

#[tokio::test]
async fn the_users_methods_refuse_what_they_cannot_do_and_a_user_is_no_node() {
    tls_provider();
    let mut gw = Gateway::start(USERS_ON, vec![]).await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let alice = add(&mut owner, "alice").await;
    for (method, params, code) in [
        ("users.add", json!({"name": "alice"}), "INVALID_REQUEST"),
        ("users.add", json!({"name": "../evil"}), "INVALID_REQUEST"),
        ("users.add", json!({}), "INVALID_REQUEST"),
        ("users.remove", json!({"name": "nobody"}), "NOT_FOUND"),
        ("users.token", json!({"name": "nobody"}), "NOT_FOUND"),
        (
            "users.passwd",
            json!({"name": "nobody", "password": "long enough"}),
            "NOT_FOUND",
        ),
    ] {
        let refused = owner.request(method, params.clone()).await;
        assert_eq!(
            refused["error"]["code"], code,
            "{method} {params}: {refused}"
        );
    }
    assert!(!gw.home.join("evil").exists() && !gw.home.join("users/nobody").exists());
    // A user's token does not make a node.
    let mut node = Client::open(&gw).await;
    let _challenge = node.recv().await;
    let mut params = crate::common::connect_params(&alice);
    params["role"] = json!("node");
    let refused = node.request("connect", params).await;
    assert_eq!(refused["error"]["code"], "FORBIDDEN", "{refused}");
    // A sign-in that is not the form's JSON.
    let bad = reqwest::Client::new()
        .post(gw.url("/auth/login"))
        .header("content-type", "application/json")
        .body("user=alice&password=x")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    gw.stop().await;
}

/// Two gateways on one home: a user added on one signs in on the other, and a token renewed on
/// the first closes the user's socket on the second (it rereads the users file when it changes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_renewed_on_one_gateway_closes_the_socket_on_the_other() {
    let first = Gateway::start(USERS_ON, vec![]).await;
    let second = first.on_same_home().await;
    let (mut owner, _) = Client::connect(&first, TOKEN).await;
    let bob_token = add(&mut owner, "bob").await;
    // The second gateway learns of Bob from the file (within a second or two).
    let (mut owner_there, _) = Client::connect(&second, TOKEN).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let listed = owner_there.request("users.list", json!({})).await;
        if listed.to_string().contains("\"bob\"") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (mut bob, _) = Client::connect(&second, &bob_token).await;
    let renewed = owner.request("users.token", json!({"name": "bob"})).await;
    assert_eq!(renewed["ok"], true, "{renewed}");
    assert_eq!(
        bob.close_code().await,
        Some(4001),
        "closed on the other gateway"
    );
}
