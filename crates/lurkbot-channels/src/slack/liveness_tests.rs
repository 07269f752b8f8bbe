//! Silent death on Slack's socket, against the Socket Mode test server: a socket that stays
//! open and says nothing — no event, no pong to the channel's pings — is taken for dead within
//! its window, the channel says why it is stale, and once Slack answers again a new socket
//! brings the next message. Never from chat silence: a quiet socket that answers pings stays
//! alive.

use std::time::Duration;

use lurkbot_test_support::slack_server::SlackServer;

use super::*;

const BOT: &str = "xoxb-liveness";
const APP: &str = "xapp-liveness";

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_socket_is_stale_and_replaced() {
    let server = SlackServer::start(BOT, APP);
    let slack = std::sync::Arc::new(
        Slack::new(Some(&server.url()), BOT, APP)
            .unwrap_or_else(|e| panic!("{e}"))
            .with_liveness(Duration::from_millis(100), Duration::from_secs(3)),
    );
    server.user_writes("DOWNER", "im", "UOWNER", "hello", None);
    let batch = slack.receive().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch[0].text, "hello");
    slack.acknowledge();
    // Quiet, but answering pings: alive, over more pings than the window holds.
    let seen = server.pings();
    until("40 more pings", || server.pings() >= seen + 40).await;
    assert_eq!(slack.stale(), None, "chat silence is not death");

    server.go_silent();
    until("the silent socket is stale", || slack.stale().is_some()).await;
    let why = slack.stale().unwrap_or_default();
    assert!(why.contains("said nothing for 3 s"), "{why}");

    server.recover();
    let waiting = {
        let slack = slack.clone();
        tokio::spawn(async move { slack.receive().await })
    };
    until("a new socket", || slack.stale().is_none()).await;
    server.user_writes("DOWNER", "im", "UOWNER", "still there?", None);
    let batch = waiting
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch[0].text, "still there?");
}
