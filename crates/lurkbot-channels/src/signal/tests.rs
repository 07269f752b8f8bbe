//! The adapter against the signal-cli test daemon: silent death — a stream that stays open and
//! says nothing, not even its keep-alives — is found by the missing keep-alives (never by
//! chat silence), the channel says why it is stale, connects again, and is alive once the
//! daemon speaks; a daemon that is gone keeps it stale.

use std::time::Duration;

use lurkbot_test_support::signal_server::SignalServer;

use super::*;

const ACCOUNT: &str = "+15550001111";

/// The next batch with a message in it.
async fn next_message(signal: &Signal) -> Vec<crate::Inbound> {
    loop {
        let batch = signal.receive().await.unwrap_or_else(|e| panic!("{e}"));
        if !batch.is_empty() {
            return batch;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_stream_is_stale_and_connected_again() {
    let server = SignalServer::start(ACCOUNT);
    // Keep-alives far more often than the silence allowed: only a real silence trips it.
    server.keep_alive_every(Duration::from_millis(50));
    let signal = Signal::new(&server.url(), ACCOUNT)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_silence(Duration::from_secs(2));
    server.user_writes("+4915550001", "u-ada", "Ada", "hello");
    let batch = next_message(&signal).await;
    assert_eq!(batch[0].text, "hello");
    assert_eq!(
        signal.stale(),
        None,
        "a quiet chat with keep-alives is alive"
    );

    server.go_silent(false);
    let gone = signal.receive().await;
    assert!(matches!(gone, Err(ChannelError::Transient(_))), "{gone:?}");
    let why = signal.stale().unwrap_or_default();
    assert!(why.contains("said nothing for 2 s"), "{why}");

    // The daemon speaks again: the next receive connects anew, and its keep-alives make the
    // channel alive before any message arrives.
    server.recover();
    // A new stream says it is alive first (an empty batch: the status says connected).
    let first = signal.receive().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(first.is_empty(), "{first:?}");
    assert_eq!(signal.stale(), None);
    server.user_writes("+4915550001", "u-ada", "Ada", "still there?");
    let batch = next_message(&signal).await;
    assert_eq!(batch[0].text, "still there?");
}

#[tokio::test]
async fn a_daemon_that_is_gone_keeps_the_channel_stale_with_where_it_was_looked_for() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        listener.local_addr().map(|a| a.port()).unwrap_or_default()
    };
    let signal =
        Signal::new(&format!("http://127.0.0.1:{port}"), ACCOUNT).unwrap_or_else(|e| panic!("{e}"));
    let refused = signal.receive().await;
    assert!(
        matches!(refused, Err(ChannelError::Transient(_))),
        "{refused:?}"
    );
    let why = signal.stale().unwrap_or_default();
    assert!(why.contains(&format!("127.0.0.1:{port}")), "{why}");
}

/// signal-cli's refusals, classified for the delivery policy: a rate limit waits and is tried
/// again, an unregistered number or an unknown group is refused for good.
#[tokio::test]
async fn signal_clis_refusals_are_classified() {
    let server = SignalServer::start(ACCOUNT);
    server.register("+4915550001");
    let signal = Signal::new(&server.url(), ACCOUNT).unwrap_or_else(|e| panic!("{e}"));
    server.rate_limit_next(1);
    let limited = signal.send_once("+4915550001", "hi", None, "k").await;
    assert!(
        matches!(limited, Err(ChannelError::RetryAfter(..))),
        "{limited:?}"
    );
    let sent = signal.send_once("+4915550001", "hi", None, "k").await;
    assert!(matches!(sent, Ok(Some(_))), "{sent:?}");
    let stranger = signal.send_once("+4470000009", "hi", None, "k").await;
    assert!(
        matches!(stranger, Err(ChannelError::Permanent(ref why)) if why.contains("Unregistered")),
        "{stranger:?}"
    );
    let group = signal.send_once("Z3JvdXA=", "hi", None, "k").await;
    assert!(
        matches!(group, Err(ChannelError::Permanent(_))),
        "{group:?}"
    );
}
