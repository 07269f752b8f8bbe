//! Slack as a channel, against a server written from Slack's API documentation
//! (`lurkbot_test_support::slack_server`: the Web API and Socket Mode envelopes): every
//! envelope acknowledged (a message only once it is recorded), a direct message under the allowlist, a channel message answered in
//! its thread only when the bot is mentioned (the thread is the session's topic), mrkdwn, a 429
//! with `Retry-After` then success, and a `disconnect` followed by a fresh connection without a
//! message lost or answered twice.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::Step;
use lurkbot_test_support::slack_server::{Posted, SlackServer};

use crate::common::Gateway;

const BOT: &str = "xoxb-test-bot-token";
const APP: &str = "xapp-test-app-token";
const WAIT: Duration = Duration::from_secs(20);

async fn posted(server: &Arc<SlackServer>, n: usize) -> Vec<Posted> {
    let server = server.clone();
    tokio::task::spawn_blocking(move || server.wait_posted(n, WAIT))
        .await
        .unwrap()
}

async fn connections(server: &Arc<SlackServer>, n: usize) {
    let server = server.clone();
    assert!(
        tokio::task::spawn_blocking(move || server.wait_connections(n, WAIT))
            .await
            .unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_socket_mode_threads_mentions_rate_limits_and_a_refresh() {
    let server = Arc::new(SlackServer::start(BOT, APP));
    let gw = Gateway::start_with_env(
        &format!("[channels.slack]\nbase_url = \"{}\"\ndm_policy = \"allowlist\"\nallow_from = [\"UOWNER\"]\n", server.url()),
        vec![Step::text("**Done** & dusted"), Step::text("In the thread."), Step::text("After the refresh.")],
        &format!("SLACK_BOT_TOKEN={BOT}\nSLACK_APP_TOKEN={APP}\n"),
    )
    .await;
    connections(&server, 1).await;

    // A stranger's direct message under the allowlist: nothing; the owner's: answered.
    server.user_writes("DSTRANGER", "im", "USTRANGER", "hello", None);
    server.rate_limit_next(1);
    server.user_writes("DOWNER", "im", "UOWNER", "status?", None);
    let all = posted(&server, 1).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        (all[0].channel.as_str(), all[0].text.as_str()),
        ("DOWNER", "*Done* &amp; dusted")
    );
    assert_eq!(all[0].thread_ts, None, "direct messages are not threaded");
    assert_eq!(server.counts().0, 2, "one 429, then sent");

    // A channel: the unmentioned message is ignored; the mention is answered in its thread.
    server.user_writes("CGENERAL", "channel", "UOWNER", "chatting away", None);
    let root = server.user_writes(
        "CGENERAL",
        "channel",
        "UOWNER",
        "<@UBOT0001> summarise",
        None,
    );
    let all = posted(&server, 2).await;
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[1].channel, "CGENERAL");
    assert_eq!(all[1].thread_ts.as_deref(), Some(root.as_str()));
    assert_eq!(gw.fake.requests().len(), 2);
    let asked = gw.fake.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(asked["content"], "summarise", "the mention is removed");

    // Slack asks for a fresh connection; a message sent meanwhile arrives once.
    server.refresh();
    server.user_writes("DOWNER", "im", "UOWNER", "still there?", None);
    connections(&server, 2).await;
    let all = posted(&server, 3).await;
    assert_eq!(all.last().unwrap().text, "After the refresh.", "{all:?}");
    assert_eq!(gw.fake.requests().len(), 3, "nothing answered twice");
    let (_, acked, _) = server.counts();
    assert!(acked >= 5, "every envelope acknowledged: {acked}");
}

/// A voice note `tts` made goes to Slack through the external upload — an upload URL asked
/// for with the file's length, the bytes sent there, the file shared in the thread of the
/// message answered — and the shared file is the OGG/Opus LurkBot kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_is_shared_in_the_thread_on_slack() {
    let server = Arc::new(SlackServer::start(BOT, APP));
    let gw = Gateway::start_with_env(
        &format!(
            "[channels.slack]\nbase_url = \"{}\"\nallow_from = [\"UOWNER\"]\n[tts]\nprovider = \"espeak\"\n",
            server.url()
        ),
        vec![
            Step::call("c1", "tts", serde_json::json!({"text": "Standup starts in five minutes."})),
            Step::text("Reminder sent."),
        ],
        &format!("SLACK_BOT_TOKEN={BOT}\nSLACK_APP_TOKEN={APP}\n"),
    )
    .await;
    connections(&server, 1).await;
    let root = server.user_writes(
        "CGENERAL",
        "channel",
        "UOWNER",
        "<@UBOT0001> remind us",
        None,
    );
    let all = posted(&server, 1).await;
    assert_eq!(all[0].text, "Reminder sent.");
    let server2 = server.clone();
    let shared = tokio::task::spawn_blocking(move || server2.wait_shared(1, WAIT))
        .await
        .unwrap();
    assert_eq!(shared.len(), 1);
    assert_eq!(shared[0].channel, "CGENERAL");
    assert_eq!(shared[0].filename, "voice.ogg");
    assert_eq!(shared[0].thread_ts.as_deref(), Some(root.as_str()));
    let kept = std::fs::read_dir(gw.home.join("workspace/audio"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert_eq!(std::fs::read(kept).unwrap(), shared[0].bytes);
}

/// A message is acknowledged to Slack only once it is recorded: while the state store cannot
/// record it, its envelope stays unacknowledged (Slack keeps it); once the store works again
/// Slack's new delivery is recorded, acknowledged and answered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_message_is_acknowledged_only_once_recorded() {
    use crate::common::{Client, TOKEN};
    use serde_json::json;

    let server = Arc::new(SlackServer::start(BOT, APP));
    let gw = Gateway::start_with_env(
        &format!(
            "[channels.slack]\nbase_url = \"{}\"\nallow_from = [\"UOWNER\"]\n",
            server.url()
        ),
        vec![Step::text("Recorded, then answered.")],
        &format!("SLACK_BOT_TOKEN={BOT}\nSLACK_APP_TOKEN={APP}\n"),
    )
    .await;
    connections(&server, 1).await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;

    // Another writer holds the store: recording waits for it, then fails.
    let db = rusqlite::Connection::open(gw.home.join(lurkbot_state::STATE_FILE)).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    server.user_writes("DOWNER", "im", "UOWNER", "are you there?", None);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status =
            c.request("channels.status", json!({})).await["payload"]["channels"][0].clone();
        if status["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("state store"))
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.counts().1, 0, "not acknowledged while not recorded");
    assert!(server.posted().is_empty());

    db.execute_batch("ROLLBACK").unwrap();
    drop(db);
    server.refresh();
    let all = posted(&server, 1).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].text, "Recorded, then answered.");
    assert_eq!(server.counts().1, 1, "acknowledged once recorded");
    assert_eq!(gw.fake.requests().len(), 1, "answered once");
}
