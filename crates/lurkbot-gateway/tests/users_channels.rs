//! One bot account serving every user of a shared gateway (ARCHITECTURE.md §6.2): a Telegram
//! sender (on the test server written from Telegram's documentation) whose pairing Alice
//! approves reaches Alice's agent only — her home, her session — while a sender the owner
//! approves stays the owner's.

use lurkbot_channels::pairing::PairingStore;
use lurkbot_llm::fake::Step;
use lurkbot_test_support::telegram_server::TelegramServer;
use serde_json::json;

use crate::channels::{BOT_TOKEN, sent};
use crate::common::{Client, Gateway, TOKEN};

/// The one code waiting in the gateway's pairings.
fn pending_code(gw: &Gateway) -> String {
    let pending = PairingStore::open(&gw.home)
        .pending(lurkbot_core::now_ms())
        .unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    pending[0].code.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_alice_pairs_reaches_alices_agent_only() {
    let server = std::sync::Arc::new(TelegramServer::start(BOT_TOKEN));
    let config = format!(
        "[users]\nenabled = true\n[channels.telegram]\nbase_url = \"{}\"\n",
        server.url()
    );
    let gw = Gateway::start_with_env(
        &config,
        vec![
            Step::text("Alice's agent here."),
            Step::text("The owner's agent here."),
        ],
        &format!("TELEGRAM_BOT_TOKEN={BOT_TOKEN}\n"),
    )
    .await;
    std::fs::write(
        gw.home.join("workspace/MEMORY.md"),
        "OWNER-PRIVATE-MEMORY\n",
    )
    .unwrap();
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let mut tokens = Vec::new();
    for name in ["alice", "bob"] {
        let added = owner.request("users.add", json!({"name": name})).await;
        tokens.push(added["payload"]["token"].as_str().unwrap().to_string());
    }
    let (mut alice, _) = Client::connect(&gw, &tokens[0]).await;
    let (mut bob, _) = Client::connect(&gw, &tokens[1]).await;

    // Alice's own Telegram account asks; the code reaches it, and she types it in.
    server.user_writes(777, 777, "alice_tg", "private", "hello");
    let first = sent(&server, 1).await;
    let code = pending_code(&gw);
    assert!(first[0].text.contains(&code));
    // Another user may not deny it, and nobody but the admin lists the codes.
    let denied = bob
        .request(
            "channels.pairing.deny",
            json!({"channel": "telegram", "code": code}),
        )
        .await;
    assert_eq!(denied["error"]["code"], "FORBIDDEN", "{denied}");
    let listed = bob.request("channels.status", json!({})).await;
    assert_eq!(listed["error"]["code"], "FORBIDDEN", "{listed}");
    let approved = alice
        .request(
            "channels.pairing.approve",
            json!({"channel": "telegram", "code": code}),
        )
        .await;
    assert_eq!(approved["ok"], true, "{approved}");
    assert_eq!(
        PairingStore::open(&gw.home)
            .user_of("telegram", "777")
            .unwrap()
            .as_deref(),
        Some("alice")
    );

    gw.fake.record(true);
    server.user_writes(777, 777, "alice_tg", "private", "alice-over-telegram");
    let all = sent(&server, 2).await;
    assert_eq!(all[1].chat_id, "777");
    assert_eq!(all[1].text, "Alice's agent here\\.");
    let alice_home = lurkbot_core::Home::open(&gw.home.join("users/alice")).unwrap();
    let hers = lurkbot_agent::Sessions::open(&alice_home, "main")
        .list()
        .unwrap();
    assert!(
        hers.contains_key("agent:main:dm:telegram:777"),
        "{:?}",
        hers.keys()
    );
    let owners = lurkbot_agent::Sessions::open(&gw.home, "main")
        .list()
        .unwrap();
    assert!(
        !owners.contains_key("agent:main:dm:telegram:777"),
        "{:?}",
        owners.keys()
    );
    let asked = gw.fake.requests()[0].body.to_string();
    assert!(asked.contains("alice-over-telegram") && !asked.contains("OWNER-PRIVATE-MEMORY"));
    // Her turn showed on her socket, never on Bob's.
    let seen = alice
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert_eq!(
        seen["payload"]["sessionKey"], "agent:main:dm:telegram:777",
        "{seen}"
    );
    assert_eq!(bob.request("health", json!({})).await["ok"], true);
    assert!(
        !bob.events
            .iter()
            .any(|e| e.to_string().contains("telegram:777"))
    );

    // A sender the owner approves stays the owner's.
    server.user_writes(888, 888, "friend", "private", "hi");
    let third = sent(&server, 3).await;
    let code = pending_code(&gw);
    assert!(third[2].text.contains(&code));
    let by_owner = owner
        .request(
            "channels.pairing.approve",
            json!({"channel": "telegram", "code": code}),
        )
        .await;
    assert_eq!(by_owner["ok"], true);
    server.user_writes(888, 888, "friend", "private", "friend-question");
    let fourth = sent(&server, 4).await;
    assert_eq!(fourth[3].text, "The owner's agent here\\.");
    let owners = lurkbot_agent::Sessions::open(&gw.home, "main")
        .list()
        .unwrap();
    assert!(owners.contains_key("agent:main:dm:telegram:888"));
    let hers = lurkbot_agent::Sessions::open(&alice_home, "main")
        .list()
        .unwrap();
    assert!(!hers.contains_key("agent:main:dm:telegram:888"));
}
