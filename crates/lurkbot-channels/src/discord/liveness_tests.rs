//! Silent death on Discord's gateway, against the gateway test server: a socket that stays open
//! and says nothing — no heartbeat acknowledged, no hello on a new one — is dropped at the next
//! heartbeat (Discord's "zombied connection"), the channel says why it is stale, and once the
//! gateway speaks again a new session brings the next message. A quiet session whose
//! heartbeats are acknowledged stays alive.

use std::time::Duration;

use lurkbot_test_support::discord_server::DiscordServer;

use super::*;

const TOKEN: &str = "liveness-token";

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_gateway_is_stale_and_replaced() {
    let server = DiscordServer::start(TOKEN, 200);
    let discord = std::sync::Arc::new(
        Discord::new(Some(&server.url()), TOKEN)
            .unwrap_or_else(|e| panic!("{e}"))
            .with_liveness(Duration::from_secs(2)),
    );
    let first = {
        let discord = discord.clone();
        tokio::spawn(async move { discord.receive().await })
    };
    assert!(
        server.wait_ready(1, Duration::from_secs(20)),
        "never identified"
    );
    server.user_writes("dm-777", None, "777", "ada", "hello", false);
    let batch = first
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch[0].text, "hello");
    discord.acknowledge();
    // Quiet, heartbeats acknowledged: alive over many of them.
    let acked = server.acked_heartbeats();
    until("5 more heartbeats", || {
        server.acked_heartbeats() >= acked + 5
    })
    .await;
    assert_eq!(discord.stale(), None, "chat silence is not death");

    server.silent(true);
    until("the silent gateway is stale", || discord.stale().is_some()).await;
    let why = discord.stale().unwrap_or_default();
    assert!(why.contains("heartbeat was not acknowledged"), "{why}");

    server.silent(false);
    let next = {
        let discord = discord.clone();
        tokio::spawn(async move { discord.receive().await })
    };
    until("a new session", || discord.stale().is_none()).await;
    assert!(
        server.wait_ready(2, Duration::from_secs(20)),
        "never identified again"
    );
    server.user_writes("dm-777", None, "777", "ada", "still there?", false);
    let batch = next
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch[0].text, "still there?");
}
