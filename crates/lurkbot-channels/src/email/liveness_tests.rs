//! Silent death on IMAP, against a real Dovecot behind a proxy that can make connections
//! half-open: every IDLE ends with a command the server must answer, so a connection gone
//! silent is found within one IDLE and the answer window — the channel says it is stale, signs
//! in again on a new connection and reads the owner's next mail. IDLEs that end with nothing
//! new are alive: chat silence is not death.

use std::time::Duration;

use lurkbot_test_support::freezing_proxy::FreezingProxy;
use lurkbot_test_support::mail_server::MailServer;

use super::*;

/// Receives until a batch holds a mail whose text is `text` (at most 30 s).
async fn receive_until(email: &Email, text: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never received {text:?}"
        );
        if let Ok(batch) = email.receive().await {
            email.acknowledge();
            if batch.iter().any(|m| m.text.contains(text)) {
                return;
            }
        }
    }
}

/// The owner mails the bot (blocking, off the runtime's threads).
async fn owner_mails(server: &std::sync::Arc<MailServer>, body: &'static str, id: &'static str) {
    let server = server.clone();
    tokio::task::spawn_blocking(move || {
        server.send("owner@localhost", "owner-pass", "Hi", body, id, &[]);
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_imap_connection_is_stale_and_the_next_one_reads_the_mail() {
    let server = std::sync::Arc::new(
        tokio::task::spawn_blocking(|| {
            MailServer::start(&[
                ("bot@localhost", "bot-pass"),
                ("owner@localhost", "owner-pass"),
            ])
        })
        .await
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let proxy = FreezingProxy::start(server.imap_port);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let email = Email::new(
        EmailSettings {
            imap_url: format!("imap://127.0.0.1:{}", proxy.port),
            smtp_url: format!("smtp://127.0.0.1:{}", server.smtp_port),
            user: "bot@localhost".into(),
            password: "bot-pass".into(),
            from: "bot@localhost".into(),
            trusted_authserv_id: Some("mail.test".into()),
        },
        dir.path().to_path_buf(),
    )
    .with_idle(Duration::from_secs(1), Duration::from_secs(2));
    // Signed in: nothing yet.
    let first = email.receive().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(first.is_empty());
    owner_mails(&server, "hello", "<h1@localhost>").await;
    receive_until(&email, "hello").await;
    // IDLEs that end with nothing new: alive.
    for _ in 0..2 {
        let quiet = email.receive().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(quiet.is_empty(), "{quiet:?}");
        assert_eq!(email.stale(), None, "chat silence is not death");
    }

    proxy.freeze();
    let dead = tokio::time::timeout(Duration::from_secs(20), email.receive())
        .await
        .unwrap_or_else(|_| panic!("the silent connection was never given up"));
    assert!(matches!(dead, Err(ChannelError::Transient(_))), "{dead:?}");
    let why = email.stale().unwrap_or_default();
    assert!(
        why.contains("the IMAP server did not answer") && why.contains("within 2 s"),
        "{why}"
    );

    let made = proxy.accepted();
    owner_mails(&server, "still there?", "<h2@localhost>").await;
    receive_until(&email, "still there?").await;
    assert_eq!(email.stale(), None);
    assert!(proxy.accepted() > made, "not on a new connection");
}
