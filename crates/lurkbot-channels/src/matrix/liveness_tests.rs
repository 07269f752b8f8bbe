//! Silent death on Matrix, against a real Synapse behind a proxy that can make connections
//! half-open: a `/sync` whose connection goes silent is given up past its wait plus the margin,
//! the channel says it is stale, and the next sync — on another connection — brings the owner's
//! next message. A sync that ends empty after its wait is alive: chat silence is not death.

use std::time::Duration;

use lurkbot_test_support::freezing_proxy::FreezingProxy;
use lurkbot_test_support::matrix_user::MatrixUser;
use lurkbot_test_support::synapse::Synapse;

use super::*;

/// Receives until a batch holds `text` (at most 30 s); fails the test otherwise.
async fn receive_until(matrix: &Matrix, text: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never received {text:?}"
        );
        if let Ok(batch) = matrix.receive().await {
            matrix.acknowledge();
            if batch.iter().any(|m| m.text == text) {
                return;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_sync_is_stale_and_the_next_one_brings_the_message() {
    let synapse = tokio::task::spawn_blocking(|| {
        let s = Synapse::start();
        s.register("bot", "bot-pass-1");
        s.register("owner", "owner-pass-1");
        s
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let port = synapse
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", synapse.url));
    let proxy = FreezingProxy::start(port);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let matrix = Matrix::new(
        &format!("http://127.0.0.1:{}", proxy.port),
        Credentials::Password {
            user: "bot".into(),
            password: "bot-pass-1".into(),
        },
        dir.path().to_path_buf(),
        Box::new(|_, _| true),
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .with_poll(Duration::from_secs(1), Duration::from_secs(2));
    // The first sync only learns the position.
    let first = matrix.receive().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(first.is_empty());

    let owner = MatrixUser::login(&synapse, "owner", "owner-pass-1").await;
    let dm = owner.create_room(&["@bot:localhost"], true).await;
    let joining = async {
        loop {
            let _ = matrix.receive().await;
            matrix.acknowledge();
        }
    };
    tokio::select! {
        () = owner.wait_joined(&dm, "@bot:localhost") => {}
        () = joining => {}
    }
    owner.say(&dm, "hello").await;
    receive_until(&matrix, "hello").await;
    // Quiet syncs, each ending empty after its wait: alive.
    for _ in 0..2 {
        let quiet = matrix.receive().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(quiet.is_empty(), "{quiet:?}");
        assert_eq!(matrix.stale(), None, "chat silence is not death");
    }

    proxy.freeze();
    let dead = tokio::time::timeout(Duration::from_secs(20), matrix.receive())
        .await
        .unwrap_or_else(|_| panic!("the silent connection was never given up"));
    assert!(matches!(dead, Err(ChannelError::Transient(_))), "{dead:?}");
    let why = matrix.stale().unwrap_or_default();
    assert!(why.contains("did not answer within 3 s"), "{why}");

    // The next syncs go out on another connection (which one is the HTTP pool's business: one
    // made just before the freeze may still be healthy) and bring the message.
    owner.say(&dm, "still there?").await;
    receive_until(&matrix, "still there?").await;
    assert_eq!(matrix.stale(), None);
}
