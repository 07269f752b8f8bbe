//! Matrix and e-mail across a SIGKILL, against the real peers (Synapse; Dovecot with aiosmtpd):
//! a message whose turn is killed during its model call is answered once on its channel after
//! the restart — the platform's resume point (Matrix's `since`, the mailbox's reading position)
//! was written only after the message was recorded, and the resumed turn's reply goes out
//! through the outbox.

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::mail_server::MailServer;
use lurkbot_test_support::matrix_user::MatrixUser;
use lurkbot_test_support::synapse::Synapse;
use serde_json::Value;

use crate::nothing_lost::{append_config, kill, model_env, start_with, transcript_messages, until};
use crate::util::Test;

fn steps() -> Vec<Step> {
    vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Answered once after the kill."),
    ]
}

fn user_messages(t: &Test, text: &str) -> usize {
    transcript_messages(t)
        .iter()
        .filter(|m| m["role"] == "user" && m["content"].as_str().is_some_and(|c| c.contains(text)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matrix_message_killed_during_its_model_call_is_answered_once() {
    let synapse = tokio::task::spawn_blocking(|| {
        let s = Synapse::start();
        s.register("bot", "bot-pass-1");
        s.register("owner", "owner-pass-1");
        s
    })
    .await
    .unwrap();
    let t = Test::init();
    append_config(
        &t,
        &format!(
            "[channels.matrix]\nbase_url = \"{}\"\nallow_from = [\"@owner:localhost\"]",
            synapse.url
        ),
    );
    std::fs::write(
        t.path(".env"),
        "MATRIX_USER=bot\nMATRIX_PASSWORD=bot-pass-1\n",
    )
    .unwrap();
    let fake = FakeProvider::start(steps()).await;
    fake.record(true);
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    let bot = "@bot:localhost";
    let owner = MatrixUser::login(&synapse, "owner", "owner-pass-1").await;
    let dm = owner.create_room(&[bot], true).await;
    owner.wait_joined(&dm, bot).await;
    owner.say(&dm, "still with me?").await;
    until("the model call", || fake.requests().len() == 1).await;
    kill(gw);

    let gw = start_with(&t, &env);
    assert_eq!(
        owner.wait_bodies(&dm, bot, 1).await,
        ["Answered once after the kill."]
    );
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        owner.bodies(&dm, bot).await,
        ["Answered once after the kill."],
        "one answer"
    );
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
    assert_eq!(user_messages(&t, "still with me?"), 1);
    drop(synapse);
}

/// The owner's INBOX once it holds `n` mails (at most 30 s).
fn inbox(server: &MailServer, n: usize) -> Vec<Value> {
    server.inbox("owner@localhost", "owner-pass", n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_killed_during_its_model_call_is_answered_once() {
    let users = [
        ("bot@localhost", "bot-pass"),
        ("owner@localhost", "owner-pass"),
    ];
    let server = tokio::task::spawn_blocking(move || MailServer::start(&users))
        .await
        .unwrap();
    let t = Test::init();
    append_config(
        &t,
        "[channels.email]\nallow_from = [\"owner@localhost\"]\ntrusted_authserv_id = \"mail.test\"",
    );
    std::fs::write(
        t.path(".env"),
        format!(
            "EMAIL_IMAP_URL=imap://127.0.0.1:{}\nEMAIL_SMTP_URL=smtp://127.0.0.1:{}\nEMAIL_USER=bot@localhost\nEMAIL_PASSWORD=bot-pass\nEMAIL_FROM=bot@localhost\n",
            server.imap_port, server.smtp_port
        ),
    )
    .unwrap();
    let fake = FakeProvider::start(steps()).await;
    fake.record(true);
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    tokio::task::block_in_place(|| {
        server.send(
            "owner@localhost",
            "owner-pass",
            "Still there?",
            "Tell me after the crash.",
            "<k1@localhost>",
            &[],
        );
    });
    until("the model call", || fake.requests().len() == 1).await;
    kill(gw);

    let gw = start_with(&t, &env);
    let server = std::sync::Arc::new(server);
    let replies = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || inbox(&server, 1))
            .await
            .unwrap()
    };
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["body"], "Answered once after the kill.");
    assert_eq!(replies[0]["inReplyTo"], "<k1@localhost>");
    // Threaded as a reply made before the crash would be.
    assert_eq!(replies[0]["subject"], "Re: Still there?", "{replies:?}");
    assert_eq!(replies[0]["references"], "<k1@localhost>", "{replies:?}");
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    let again = tokio::task::spawn_blocking(move || inbox(&server, 1))
        .await
        .unwrap();
    assert_eq!(again.len(), 1, "one answer: {again:?}");
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
    assert_eq!(user_messages(&t, "Tell me after the crash."), 1);
}
