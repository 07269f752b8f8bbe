//! The contract every channel keeps (ARCHITECTURE.md §6.1.2), one suite run against each
//! platform through its test server: a message answered once even when the platform serves it
//! again; a long reply cut within the platform's limit, nothing lost; a stranger given a
//! pairing code with the model never called; `channels status` true to the connection. Each
//! platform is a [`Platform`]; what one cannot do is declared there and the row says so.
//! In the suite: Telegram, WhatsApp (Cloud API), Signal, Discord and Slack through test servers
//! written from their documentation; Matrix (Synapse), e-mail (Dovecot) and IRC (ngircd)
//! through the real servers; and a channel a plugin provides (`contract_plugin.rs`).

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN};

const WAIT: Duration = Duration::from_secs(30);

/// One reply the platform received from the bot.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// Who it went to.
    pub(crate) to: String,
    /// Its text as the recipient reads it.
    pub(crate) text: String,
    /// Its length as the platform counts what was sent (escapes and all).
    pub(crate) sent_len: usize,
}

/// A platform behind its test server, as the suite drives it.
pub(crate) trait Platform: Send + Sync + 'static {
    /// Its name in config.toml.
    const NAME: &'static str;
    /// The longest message it takes, in its own units (as `Reply::text` counts them).
    const LIMIT: usize;
    /// Its `[channels.<name>]` table (the owner allowed) and `.env` lines.
    fn settings(&self) -> (String, String);
    /// The chat where replies to the owner go.
    fn owner(&self) -> String;
    /// Files the home holds at start (home-relative path, content), beside `.env`.
    fn files(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Waits until the gateway's connection is up (a platform that pushes over a socket, or
    /// one whose first look skips what is already there).
    async fn ready(&self, _gw: &Gateway) {}
    /// `who` writes `text` directly (a stranger when not the owner); what identifies the
    /// message for serving it again.
    async fn writes(&self, gw: &Gateway, owner: bool, text: &str) -> String;
    /// The owner writes `text` in a group chat with the bot, mentioning it (in the platform's
    /// own way) or not; or why the platform has no group chats.
    async fn writes_in_group(
        &self,
        gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str>;
    /// The platform serves message `id` once more (a crash before its acknowledgement, a
    /// reconnect), or why it cannot.
    async fn serve_again(&self, gw: &Gateway, id: &str) -> Result<(), &'static str>;
    /// Waits until `n` replies arrived; those by then.
    async fn replies(&self, n: usize) -> Vec<Reply>;
}

async fn gateway<P: Platform>(platform: &P, steps: Vec<Step>) -> Gateway {
    let (table, env) = platform.settings();
    let config = format!("[channels.{}]\n{table}", P::NAME);
    let files = platform.files();
    let gw = if files.is_empty() {
        Gateway::start_with_env(&config, steps, &env).await
    } else {
        assert!(
            env.is_empty(),
            "files and .env lines together are not supported"
        );
        Gateway::start_with_files(&config, steps, &files).await
    };
    platform.ready(&gw).await;
    gw
}

/// A message is answered once, even when the platform serves it again.
pub(crate) async fn answered_once<P: Platform>(platform: P) {
    let gw = gateway(
        &platform,
        vec![Step::text("First answer."), Step::text("Second answer.")],
    )
    .await;
    let first = platform.writes(&gw, true, "ping").await;
    let replies = platform.replies(1).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].to, platform.owner());
    assert!(replies[0].text.contains("First answer"), "{replies:?}");
    match platform.serve_again(&gw, &first).await {
        Ok(()) => {}
        Err(why) => eprintln!("{}: row 'served again' skipped: {why}", P::NAME),
    }
    platform.writes(&gw, true, "and now?").await;
    let replies = platform.replies(2).await;
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert!(replies[1].text.contains("Second answer"), "{replies:?}");
    assert_eq!(
        gw.fake.requests().len(),
        2,
        "the message served again reached the model"
    );
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let status = c.request("channels.status", json!({})).await["payload"].clone();
    let channel = status["channels"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["name"] == P::NAME))
        .cloned()
        .unwrap_or_default();
    assert_eq!(channel["state"], "connected", "{status}");
    assert_eq!(channel["sent"], 2, "{status}");
}

/// A reply over the platform's limit goes in pieces within it, in order, nothing lost.
pub(crate) async fn long_reply_cut<P: Platform>(platform: P) {
    let sentence = "The quick brown fox jumps over the lazy dog. ";
    let long = sentence.repeat(P::LIMIT * 5 / 2 / sentence.len());
    let gw = gateway(&platform, vec![Step::text(&long)]).await;
    platform.writes(&gw, true, "tell me a lot").await;
    // Piece by piece until the whole text is there (escaping may make more pieces).
    let mut replies = platform.replies(3).await;
    while replies.len() >= 3
        && replies
            .iter()
            .map(|r| r.text.trim().len() + 1)
            .sum::<usize>()
            < long.trim().len()
    {
        replies = platform.replies(replies.len() + 1).await;
    }
    assert!(replies.len() >= 3, "{} pieces", replies.len());
    for piece in &replies {
        assert!(
            piece.sent_len <= P::LIMIT,
            "a piece of {} over {}",
            piece.sent_len,
            P::LIMIT
        );
    }
    let joined: Vec<String> = replies.iter().map(|r| r.text.trim().to_string()).collect();
    assert_eq!(joined.join(" "), long.trim(), "pieces lost or out of order");
}

/// A stranger gets a pairing code, and the model is never called.
pub(crate) async fn stranger_paired<P: Platform>(platform: P) {
    let gw = gateway(&platform, vec![]).await;
    platform.writes(&gw, false, "hello bot").await;
    let replies = platform.replies(1).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_ne!(replies[0].to, platform.owner());
    assert!(replies[0].text.contains("pairing code"), "{replies:?}");
    assert!(
        gw.fake.requests().is_empty(),
        "a stranger reached the model"
    );
}

/// In a group, only a message that mentions the bot reaches the model.
pub(crate) async fn group_needs_a_mention<P: Platform>(platform: P) {
    let gw = gateway(&platform, vec![Step::text("Group answer.")]).await;
    if let Err(why) = platform
        .writes_in_group(&gw, false, "just chatting among us")
        .await
    {
        eprintln!("{}: row 'group mentions' skipped: {why}", P::NAME);
        return;
    }
    platform
        .writes_in_group(&gw, true, "what do you think?")
        .await
        .unwrap_or_else(|why| panic!("{why}"));
    let replies = platform.replies(1).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_ne!(
        replies[0].to,
        platform.owner(),
        "answered in the direct chat"
    );
    assert!(replies[0].text.contains("Group answer"), "{replies:?}");
    let requests = gw.fake.requests();
    let asked = crate::common::last_user_message(&requests[0].body).to_string();
    assert!(
        asked.contains("what do you think?") && !asked.contains("just chatting"),
        "the unmentioned message reached the model: {asked}"
    );
}

/// The suite's rows for one platform, each a test.
macro_rules! contract {
    ($module:ident, $make:expr) => {
        mod $module {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_message_is_answered_once_even_when_served_again() {
                crate::contract::answered_once($make).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_long_reply_is_cut_within_the_limit() {
                crate::contract::long_reply_cut($make).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_stranger_gets_a_pairing_code_and_the_model_is_not_called() {
                crate::contract::stranger_paired($make).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn in_a_group_only_a_mention_reaches_the_model() {
                crate::contract::group_needs_a_mention($make).await;
            }
        }
    };
}

contract!(telegram, crate::contract_platforms::Telegram::new());
contract!(whatsapp, crate::contract_platforms::WhatsApp::new());
contract!(signal, crate::contract_platforms::Signal::new());
contract!(discord, crate::contract_platforms::Discord::new());
contract!(slack, crate::contract_platforms::Slack::new());
contract!(matrix, crate::contract_servers::Matrix::new());
contract!(email, crate::contract_servers::Email::new());
contract!(irc, crate::contract_servers::Irc::new());
contract!(plugin, crate::contract_plugin::Plugin::new());

/// Waits until channel `name` says it is connected (at most [`WAIT`]).
pub(crate) async fn connected(gw: &Gateway, name: &str) {
    let (mut c, _) = Client::connect(gw, TOKEN).await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let status = c.request("channels.status", json!({})).await["payload"].clone();
        let up = status["channels"].as_array().is_some_and(|all| {
            all.iter()
                .any(|c| c["name"] == name && c["state"] == "connected")
        });
        if up {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} never connected: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits off the runtime's threads.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// How long a row waits for replies.
pub(crate) const fn wait() -> Duration {
    WAIT
}

/// A test server shared with the blocking waits.
pub(crate) type Shared<T> = Arc<T>;
