//! Discord across a crash (ARCHITECTURE.md §6.3), with SIGKILL: a send repeated after the
//! crash window posts once (the outbox's nonce), and a message sent while the gateway was down
//! is answered after the restart (the recorded session is resumed and Discord replays it).

use std::time::Duration;

use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_test_support::discord_server::DiscordServer;

use crate::nothing_lost::{append_config, kill, model_env, start_with, until};
use crate::util::Test;

/// Discord: a reply whose send reached Discord but whose "sent" mark never reached the outbox
/// (the gateway died between the two) is sent again after the restart under the same `nonce`
/// with `enforce_nonce`, and Discord makes no second message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_sent_again_after_a_crash_posts_once_on_discord() {
    const DISCORD_TOKEN: &str = "discord-lost-nothing";
    let t = Test::init();
    let discord = DiscordServer::start(DISCORD_TOKEN, 300);
    append_config(
        &t,
        &format!(
            "[channels.discord]\nbase_url = \"{}\"\nallow_from = [\"777\"]",
            discord.url()
        ),
    );
    std::fs::write(
        t.path(".env"),
        format!("DISCORD_BOT_TOKEN={DISCORD_TOKEN}\n"),
    )
    .unwrap();
    let fake = FakeProvider::start(vec![Step::text("Posted once.")]).await;
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    assert!(discord.wait_ready(1, Duration::from_secs(60)));
    discord.user_writes("dm-777", None, "777", "ada", "hi", false);
    assert_eq!(discord.wait_sent(1, Duration::from_secs(60)).len(), 1);
    let listed = || t.run(&["outbox", "--all", "--json"]).json();
    until("the reply marked sent", || listed()[0]["state"] == "sent").await;
    kill(gw);
    // The crash window: the row as it was before the send was recorded.
    let db = rusqlite::Connection::open(t.path("state/state.sqlite")).unwrap();
    let changed = db
        .execute(
            "UPDATE outbox SET state = 'pending', pieces_sent = 0, platform_id = NULL",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(db);

    let gw = start_with(&t, &env);
    until("the reply sent again", || discord.send_attempts() >= 2).await;
    until("the reply marked sent again", || {
        listed()[0]["state"] == "sent"
    })
    .await;
    assert_eq!(discord.sent().len(), 1, "one message: {:?}", discord.sent());
    assert_eq!(discord.sent()[0].content, "Posted once.");
    assert_eq!(fake.requests().len(), 1, "the turn was not run again");
    drop(gw);
}

/// Discord: a message sent while the gateway was down (killed) is answered after the restart —
/// the gateway resumes the session it recorded, Discord replays what it missed — and the
/// message answered before the kill is not answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_message_sent_while_the_gateway_was_down_is_answered_after_it() {
    const DISCORD_TOKEN: &str = "discord-resume";
    let t = Test::init();
    let discord = DiscordServer::start(DISCORD_TOKEN, 300);
    append_config(
        &t,
        &format!(
            "[channels.discord]\nbase_url = \"{}\"\nallow_from = [\"777\"]",
            discord.url()
        ),
    );
    std::fs::write(
        t.path(".env"),
        format!("DISCORD_BOT_TOKEN={DISCORD_TOKEN}\n"),
    )
    .unwrap();
    let fake = FakeProvider::start(vec![
        Step::text("First."),
        Step::text("While you were away."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);
    let gw = start_with(&t, &env);
    assert!(discord.wait_ready(1, Duration::from_secs(60)));
    discord.user_writes("dm-777", None, "777", "ada", "one", false);
    assert_eq!(discord.wait_sent(1, Duration::from_secs(60)).len(), 1);
    until("the session saved", || {
        t.path("channels/discord/state.json").is_file()
    })
    .await;
    kill(gw);
    discord.user_writes("dm-777", None, "777", "ada", "two", false);
    let gw = start_with(&t, &env);
    let sent = discord.wait_sent(2, Duration::from_secs(60));
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].content, "While you were away.");
    assert_eq!(
        discord.handshakes().1,
        1,
        "the session was resumed, not identified anew"
    );
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        discord.sent().len(),
        2,
        "nothing answered twice: {:?}",
        discord.sent()
    );
    assert_eq!(fake.requests().len(), 2);
}
