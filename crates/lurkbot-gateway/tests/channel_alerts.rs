//! A channel that cannot go on by itself tells the owner elsewhere (ARCHITECTURE.md §6.1.2):
//! Telegram refusing the bot's token (401, for good) stops the channel, its status says
//! `failed`, and the owner reads why in the web UI's main session; a channel stale past its
//! `stale_alert_after` is told, and so is its recovery.

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

/// Silent death told, then the recovery: a Signal daemon that cannot be reached keeps the
/// channel `stale` (its liveness, not chat silence); past `stale_alert_after` the owner reads
/// why in the web UI, and once the daemon answers again, that it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_stale_past_its_grace_is_told_and_so_is_its_recovery() {
    use lurkbot_test_support::signal_server::SignalServer;
    let port = lurkbot_test_support::ports::free_port();
    let gw = Gateway::start(
        &format!(
            "[channels.signal]\naccount = \"+15550001111\"\nbase_url = \"http://127.0.0.1:{port}\"\nstale_alert_after = \"2s\"\n"
        ),
        vec![],
    )
    .await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let history = until_main_says(&mut c, "The signal channel stopped").await;
    assert!(history.contains(&format!("127.0.0.1:{port}")), "{history}");
    let status = c.request("channels.status", json!({})).await["payload"].clone();
    assert_eq!(status["channels"][0]["state"], "retrying", "{status}");

    // The daemon comes up where it was looked for: the channel is back, and the owner is told.
    let _daemon = SignalServer::start_on("+15550001111", port);
    let history = until_main_says(&mut c, "The signal channel is back").await;
    assert_eq!(
        history.matches("The signal channel stopped").count(),
        1,
        "told once for the spell: {history}"
    );
    // The spell in the metrics: reconnects by reason, and when the channel last received.
    let metrics = crate::common::http()
        .get(gw.url("/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("lurkbot_channel_reconnects_total{")
                && l.contains("channel=\"signal\"")
                && l.contains("reason=\"stale\"")),
        "{metrics}"
    );
    assert!(
        metrics.contains("lurkbot_channel_last_receive_seconds{channel=\"signal\"}"),
        "{metrics}"
    );
}

/// The main session's history once it contains `text` (within 60 s).
async fn until_main_says(c: &mut Client, text: &str) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let history = c
            .request("chat.history", json!({"sessionKey": "agent:main:main"}))
            .await
            .to_string();
        if history.contains(text) {
            return history;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never said {text:?}: {history}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
