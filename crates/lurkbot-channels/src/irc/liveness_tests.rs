//! Silent death on IRC, against a real ngircd behind a proxy that can make connections
//! half-open: a server silent past the line's window is pinged, and a link that stays silent as
//! long again is dropped — the line says it is stale — and made anew, where the next message
//! arrives. A quiet link whose server answers the pings stays alive: chat silence is not death.
//! (The old link's nick stays taken until the server drops it, so the new one registers under
//! the client's fallback nick, as any IRC client's would.)

use std::time::Duration;

use lurkbot_core::Home;
use lurkbot_term::IrcEvent;
use lurkbot_test_support::freezing_proxy::FreezingProxy;
use lurkbot_test_support::irc_server::{IrcOptions, IrcPeer, IrcServer};

use super::*;

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next batch's texts (at most 20 s).
async fn texts(line: &IrcLine) -> Vec<String> {
    tokio::time::timeout(Duration::from_secs(20), line.receive())
        .await
        .unwrap_or_else(|_| panic!("no message"))
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|m| m.text)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_link_is_stale_and_made_anew() {
    let server = tokio::task::spawn_blocking(|| IrcServer::start(&IrcOptions::default()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let proxy = FreezingProxy::start(server.port);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let home = Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let secrets = home.join("skills/irc-cli/secrets");
    std::fs::create_dir_all(&secrets).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        secrets.join(".env"),
        format!(
            "IRC_SERVER=127.0.0.1\nIRC_PORT={}\nIRC_TLS=0\nIRC_CHANNEL=\"#lurk\"\nIRC_NICK=lurkbot\n",
            proxy.port
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = mpsc::unbounded_channel();
    let sessions = Arc::new(IrcSessions::new(
        home,
        Some(Arc::new(move |event| {
            if let IrcEvent::Inbound { message, .. } = event {
                let _ = tx.send(message);
            }
        })),
    ));
    let line = IrcLine::new(sessions, rx).with_ping_after(Duration::from_secs(1));
    let connected = line.receive().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(connected.is_empty());
    let mut peer = tokio::task::block_in_place(|| {
        let mut peer = IrcPeer::connect(server.port, "ada", None);
        peer.join("#lurk", None);
        peer.say("lurkbot", "hello");
        peer
    });
    assert_eq!(texts(&line).await, ["hello"]);
    // Quiet, the server answering the line's pings: alive, over several pings (counted as
    // what the server sent through the proxy; nobody else speaks).
    let heard = proxy.from_server();
    until("three more answers from the server", || {
        assert_eq!(line.stale(), None, "chat silence is not death");
        proxy.from_server() >= heard + 3
    })
    .await;

    proxy.freeze();
    until("the silent link is stale", || line.stale().is_some()).await;
    let why = line.stale().unwrap_or_default();
    assert!(why.contains("the server stopped answering"), "{why}");
    let made = proxy.accepted();
    until("a new link", || line.stale().is_none()).await;
    assert!(proxy.accepted() > made, "not on a new connection");
    tokio::task::block_in_place(|| {
        peer.expect(|l| l.starts_with(":lurkbot_!") && l.contains(" JOIN "));
        peer.say("#lurk", "lurkbot, still there?");
    });
    assert_eq!(texts(&line).await, ["lurkbot, still there?"]);
}
