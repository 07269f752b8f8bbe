//! One gateway receives each channel (ARCHITECTURE.md §6.3): a second gateway on the home stands
//! by instead of polling Telegram too (Telegram would end one poll with a 409), and takes the
//! channel over when the first stops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lurkbot_llm::fake::Step;
use lurkbot_test_support::telegram_server::TelegramServer;
use serde_json::{Value, json};

use crate::channels::{BOT_TOKEN, sent};
use crate::common::{Client, Gateway, TOKEN};

/// Waits (at most 30 s) until the gateway of `c` holds the Telegram channel's lease.
async fn receives(c: &mut Client, home: &lurkbot_core::Home) {
    let me = c.request("status", json!({})).await["payload"]["gatewayId"].clone();
    let store = lurkbot_state::Store::open(home).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.lease_holder("channel:telegram").unwrap().as_deref() != me.as_str() {
        assert!(Instant::now() < deadline, "{me} never took the channel");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `channels.status` until telegram's state is `want` (at most 30 s).
async fn telegram_state(c: &mut Client, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status =
            c.request("channels.status", json!({})).await["payload"]["channels"][0].clone();
        if status["state"] == want {
            return status;
        }
        assert!(Instant::now() < deadline, "never {want}: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gateway_polls_telegram_and_the_other_takes_over_when_it_stops() {
    let server = Arc::new(TelegramServer::start(BOT_TOKEN));
    let mut first = Gateway::start_with_env(
        &format!(
            "[channels.telegram]\nbase_url = \"{}\"\nallow_from = [\"555\"]\n",
            server.url()
        ),
        vec![
            Step::text("From the first."),
            Step::text("From the second."),
        ],
        &format!("TELEGRAM_BOT_TOKEN={BOT_TOKEN}\n"),
    )
    .await;
    let (mut c1, _) = Client::connect(&first, TOKEN).await;
    receives(&mut c1, &first.home).await;
    let second = first.on_same_home().await;
    let (mut c2, _) = Client::connect(&second, TOKEN).await;
    telegram_state(&mut c2, "standby").await;

    server.user_writes(555, 555, "ada", "private", "who polls?");
    let all = sent(&server, 1).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].text, "From the first\\.");
    assert_eq!(server.conflicts(), 0, "one poller at a time");

    // The first stops: the second takes the channel over and answers the next message.
    drop(c1);
    first.stop().await;
    receives(&mut c2, &second.home).await;
    server.user_writes(555, 555, "ada", "private", "and now?");
    let all = sent(&server, 2).await;
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[1].text, "From the second\\.");
    assert_eq!(first.fake.requests().len(), 2, "each answered once");
}
