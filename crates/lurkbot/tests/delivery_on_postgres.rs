//! A reply recorded and not yet delivered when its gateway dies, on PostgreSQL (Debian's 15 on
//! loopback): another gateway on the database sends it, once, and runs nothing again.

use std::time::Duration;

use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_test_support::postgres::Postgres;
use lurkbot_test_support::telegram_server::TelegramServer;

use crate::gateways_on_postgres::home_on;
use crate::nothing_lost::{kill, start_as, until, with_telegram};

const BOT_TOKEN: &str = "123456:delivered-once";

/// Telegram: the turn ends and its reply is in the outbox, but Telegram refuses the send
/// (a 429 asking for an hour) and the gateway is SIGKILLed before it tries again; another
/// gateway starting on the database sends the reply at once — one message, the model asked
/// once, the message not answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_reply_not_delivered_before_a_kill_is_sent_once_by_another_gateway() {
    let pg = Postgres::start();
    let t = home_on(&pg, "delivery");
    let telegram = TelegramServer::start(BOT_TOKEN);
    with_telegram(&t, &telegram, BOT_TOKEN);
    let fake = FakeProvider::start(vec![Step::text("Delivered by whoever is left.")]).await;
    fake.record(true);
    let first = start_as(&t, &fake, "gw-first");
    assert!(!telegram.wait_offsets(1, Duration::from_secs(30)).is_empty());
    telegram.rate_limit_next(1, 3600);
    telegram.user_writes(42, 42, "ada", "private", "are you there?");
    let pending = || {
        let listed = t.run(&["outbox", "--all", "--json"]);
        listed.json()[0]["state"] == "pending" && telegram.send_attempts() == 1
    };
    until("the reply recorded, its send refused", pending).await;
    assert!(telegram.sent().is_empty());
    kill(first);
    let polls = telegram.offsets().len();

    let second = start_as(&t, &fake, "gw-second");
    let sent = telegram.wait_sent(1, Duration::from_secs(30));
    assert_eq!(sent.len(), 1, "sent by the gateway left");
    assert_eq!(sent[0].text, "Delivered by whoever is left\\.");
    until("the reply marked sent", || {
        t.run(&["outbox", "--all", "--json"]).json()[0]["state"] == "sent"
    })
    .await;
    // The second takes the poll too (after replaying what was recorded and not handled:
    // nothing, the message was handled).
    until("the second polls", || telegram.offsets().len() > polls).await;
    let (status, stderr) = tokio::task::spawn_blocking(move || second.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(telegram.sent().len(), 1, "{:?}", telegram.sent());
    assert_eq!(fake.requests().len(), 1, "the turn was not run again");
}
