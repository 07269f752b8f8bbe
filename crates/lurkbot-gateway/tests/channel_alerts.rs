//! A channel that cannot go on by itself tells the owner elsewhere (ARCHITECTURE.md §6.1.2):
//! Telegram refusing the bot's token (401, for good) stops the channel, its status says
//! `failed`, and the owner reads why in the web UI's main session.

use std::time::Duration;

use lurkbot_test_support::telegram_server::TelegramServer;
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_that_stops_for_good_is_told_to_the_owner_once() {
    // The server knows another token: every call of this bot is refused with 401.
    let server = TelegramServer::start("999:the-real-token");
    let gw = Gateway::start_with_env(
        &format!(
            "[channels.telegram]\nbase_url = \"{}\"\nallow_from = [\"42\"]\n",
            server.url()
        ),
        vec![],
        "TELEGRAM_BOT_TOKEN=123456:a-revoked-token\n",
    )
    .await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let history = loop {
        let history = c
            .request("chat.history", json!({"sessionKey": "agent:main:main"}))
            .await
            .to_string();
        if history.contains("The telegram channel stopped") {
            break history;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the owner was never told: {history}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(history.contains("401"), "{history}");
    let status = c.request("channels.status", json!({})).await["payload"].clone();
    let channel = &status["channels"][0];
    assert_eq!(channel["state"], "failed", "{status}");
    assert_eq!(
        history.matches("The telegram channel stopped").count(),
        1,
        "told once: {history}"
    );
}
