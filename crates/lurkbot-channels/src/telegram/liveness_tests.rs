//! Silent death on Telegram's long poll, against the Bot API test server: a `getUpdates` taken
//! and never answered (a half-open connection) is given up past its wait, the channel says it
//! is stale, and the next poll — once Telegram answers again — brings the next message. A poll
//! that ends empty after its wait is alive: chat silence is not death.

use std::time::Duration;

use lurkbot_test_support::telegram_server::TelegramServer;

use super::*;

const TOKEN: &str = "123456:liveness";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_never_answered_is_stale_and_the_next_one_brings_the_message() {
    let server = TelegramServer::start(TOKEN);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let telegram = Telegram::new(Some(&server.url()), TOKEN, dir.path().to_path_buf())
        .unwrap_or_else(|e| panic!("{e}"))
        .with_poll(Duration::from_secs(1), Duration::from_secs(2));
    // Nothing to say: an empty poll, alive.
    let quiet = telegram.receive().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(quiet.is_empty());
    assert_eq!(telegram.stale(), None, "chat silence is not death");

    server.silent(true);
    let dead = telegram.receive().await;
    assert!(matches!(dead, Err(ChannelError::Transient(_))), "{dead:?}");
    let why = telegram.stale().unwrap_or_default();
    assert!(why.contains("did not answer within 3 s"), "{why}");

    server.silent(false);
    server.user_writes(42, 42, "ada", "private", "still there?");
    let batch = telegram.receive().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch.first().map(|m| m.text.as_str()), Some("still there?"));
    assert_eq!(telegram.stale(), None);
}
