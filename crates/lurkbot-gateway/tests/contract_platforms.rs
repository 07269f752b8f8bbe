//! The platforms of the contract suite (`contract.rs`), each behind its test server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lurkbot_test_support::signal_server::SignalServer;
use lurkbot_test_support::telegram_server::{BOT_USERNAME, TelegramServer};
use lurkbot_test_support::whatsapp_server::{WhatsAppServer, signature, text_notification};

use crate::common::Gateway;
use crate::contract::{Platform, Reply, Shared, blocking, wait};

/// Telegram's Bot API (long polling).
pub(crate) struct Telegram(Shared<TelegramServer>);

impl Telegram {
    const TOKEN: &'static str = "123456:contract-token";

    pub(crate) fn new() -> Self {
        Self(Arc::new(TelegramServer::start(Self::TOKEN)))
    }
}

/// MarkdownV2 as read: its escapes removed.
fn unescaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaped = false;
    for c in text.chars() {
        if c == '\\' && !escaped {
            escaped = true;
            continue;
        }
        escaped = false;
        out.push(c);
    }
    out
}

impl Platform for Telegram {
    const NAME: &'static str = "telegram";
    const LIMIT: usize = 4096;

    fn settings(&self) -> (String, String) {
        (
            format!("base_url = \"{}\"\nallow_from = [\"42\"]\n", self.0.url()),
            format!("TELEGRAM_BOT_TOKEN={}\n", Self::TOKEN),
        )
    }

    fn owner(&self) -> String {
        "42".into()
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        let id = if owner {
            self.0.user_writes(42, 42, "ada", "private", text)
        } else {
            self.0.user_writes(555, 555, "eve", "private", text)
        };
        id.to_string()
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str> {
        let text = if mention {
            format!("@{BOT_USERNAME} {text}")
        } else {
            text.to_string()
        };
        self.0.user_writes(-1001, 42, "ada", "supergroup", &text);
        Ok(())
    }

    async fn serve_again(&self, _gw: &Gateway, id: &str) -> Result<(), &'static str> {
        let (server, id) = (self.0.clone(), id.parse::<i64>().unwrap_or_default());
        // Served again once the bot confirmed it (its next poll's offset).
        let served = blocking(move || {
            let deadline = std::time::Instant::now() + wait();
            while std::time::Instant::now() < deadline {
                if server.serve_again(id) {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            false
        })
        .await;
        assert!(served, "update {id} was never confirmed");
        Ok(())
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let server = self.0.clone();
        blocking(move || server.wait_sent(n, wait()))
            .await
            .into_iter()
            .map(|s| Reply {
                to: s.chat_id,
                sent_len: s.text.chars().count(),
                text: unescaped(&s.text),
            })
            .collect()
    }
}

/// WhatsApp's Cloud API (signed webhooks in, the Graph API out).
pub(crate) struct WhatsApp(Shared<WhatsAppServer>, AtomicU64);

impl WhatsApp {
    const TOKEN: &'static str = "EAAGcontract";
    const SECRET: &'static str = "contract-secret";
    const PHONE: &'static str = "106540352242922";

    pub(crate) fn new() -> Self {
        Self(
            Arc::new(WhatsAppServer::start(Self::TOKEN, Self::PHONE)),
            AtomicU64::new(0),
        )
    }

    async fn post(gw: &Gateway, body: &str) {
        let status = crate::common::http()
            .post(gw.url("/channels/whatsapp/webhook"))
            .header("content-type", "application/json")
            .header(
                "x-hub-signature-256",
                signature(Self::SECRET, body.as_bytes()),
            )
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200);
    }
}

impl Platform for WhatsApp {
    const NAME: &'static str = "whatsapp";
    const LIMIT: usize = 4096;

    fn settings(&self) -> (String, String) {
        (
            format!(
                "mode = \"cloud\"\nbase_url = \"{}\"\nphone_number_id = \"{}\"\nallow_from = [\"4915550001\"]\n",
                self.0.url(),
                Self::PHONE
            ),
            format!(
                "WHATSAPP_ACCESS_TOKEN={}\nWHATSAPP_APP_SECRET={}\nWHATSAPP_VERIFY_TOKEN=v\n",
                Self::TOKEN,
                Self::SECRET
            ),
        )
    }

    fn owner(&self) -> String {
        "4915550001".into()
    }

    async fn writes(&self, gw: &Gateway, owner: bool, text: &str) -> String {
        let n = self.1.fetch_add(1, Ordering::Relaxed);
        let from = if owner { "4915550001" } else { "4470000000" };
        let body =
            text_notification(Self::PHONE, from, "Ada", &format!("wamid.C{n}"), text).to_string();
        Self::post(gw, &body).await;
        body
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        _mention: bool,
        _text: &str,
    ) -> Result<(), &'static str> {
        Err("WhatsApp's Cloud API serves no group chats (a linked device does)")
    }

    async fn serve_again(&self, gw: &Gateway, id: &str) -> Result<(), &'static str> {
        // Meta delivers the same notification again.
        Self::post(gw, id).await;
        Ok(())
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let server = self.0.clone();
        blocking(move || server.wait_sent(n, wait()))
            .await
            .into_iter()
            .map(|s| Reply {
                to: s.to,
                sent_len: s.body.chars().count(),
                text: s.body,
            })
            .collect()
    }
}

/// Signal through signal-cli's HTTP daemon.
pub(crate) struct Signal(Shared<SignalServer>);

impl Signal {
    const ACCOUNT: &'static str = "+15550001111";
    const GROUP: &'static str = "Zm9vYmFyZ3JvdXA=";

    pub(crate) fn new() -> Self {
        let server = SignalServer::start(Self::ACCOUNT);
        server.add_group(Self::GROUP);
        server.register("+4915550001");
        server.register("+4470000000");
        Self(Arc::new(server))
    }
}

impl Platform for Signal {
    const NAME: &'static str = "signal";
    const LIMIT: usize = 2000;

    fn settings(&self) -> (String, String) {
        (
            format!(
                "account = \"{}\"\nbase_url = \"{}\"\nallow_from = [\"+4915550001\"]\n",
                Self::ACCOUNT,
                self.0.url()
            ),
            String::new(),
        )
    }

    fn owner(&self) -> String {
        "+4915550001".into()
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        let (number, uuid) = if owner {
            ("+4915550001", "6a1f0e3b-0c4d-4e5f-8a9b-112233445566")
        } else {
            ("+4470000000", "7b2e0000-0000-4000-8000-000000000002")
        };
        self.0.user_writes(number, uuid, "Ada", text).to_string()
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str> {
        // A mention is U+FFFC in the text, and who it names beside it.
        let (text, mentions) = if mention {
            (
                format!("\u{FFFC} {text}"),
                serde_json::json!([{"number": Self::ACCOUNT, "start": 0, "length": 1}]),
            )
        } else {
            (text.to_string(), serde_json::json!([]))
        };
        self.0.user_sends(
            "+4915550001",
            "6a1f0e3b-0c4d-4e5f-8a9b-112233445566",
            "Ada",
            serde_json::json!({"message": text, "mentions": mentions,
                "groupInfo": {"groupId": Self::GROUP, "groupName": "Family", "revision": 1, "type": "DELIVER"}}),
        );
        Ok(())
    }

    async fn serve_again(&self, _gw: &Gateway, id: &str) -> Result<(), &'static str> {
        assert!(self.0.deliver_again(id.parse().unwrap_or_default()));
        Ok(())
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let server = self.0.clone();
        blocking(move || server.wait_calls("send", n, wait()))
            .await
            .into_iter()
            .map(|c| {
                let text = c.params["message"].as_str().unwrap_or_default().to_string();
                Reply {
                    to: c.params["recipient"][0]
                        .as_str()
                        .or_else(|| c.params["groupId"].as_str())
                        .unwrap_or_default()
                        .to_string(),
                    sent_len: text.chars().count(),
                    text,
                }
            })
            .collect()
    }
}

/// Discord's gateway (a WebSocket with heartbeats) and REST API.
pub(crate) struct Discord(Shared<lurkbot_test_support::discord_server::DiscordServer>);

impl Discord {
    const TOKEN: &'static str = "contract-discord-token";

    pub(crate) fn new() -> Self {
        Self(Arc::new(
            lurkbot_test_support::discord_server::DiscordServer::start(Self::TOKEN, 300),
        ))
    }
}

impl Platform for Discord {
    const NAME: &'static str = "discord";
    const LIMIT: usize = 2000;

    fn settings(&self) -> (String, String) {
        (
            format!("base_url = \"{}\"\nallow_from = [\"777\"]\n", self.0.url()),
            format!("DISCORD_BOT_TOKEN={}\n", Self::TOKEN),
        )
    }

    fn owner(&self) -> String {
        "dm-777".into()
    }

    async fn ready(&self, _gw: &Gateway) {
        let server = self.0.clone();
        assert!(
            blocking(move || server.wait_ready(1, wait())).await,
            "never identified"
        );
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        if owner {
            self.0
                .user_writes("dm-777", None, "777", "ada", text, false);
        } else {
            self.0
                .user_writes("dm-555", None, "555", "eve", text, false);
        }
        String::new()
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str> {
        self.0
            .user_writes("chan-group", Some("guild-1"), "777", "ada", text, mention);
        Ok(())
    }

    async fn serve_again(&self, _gw: &Gateway, _id: &str) -> Result<(), &'static str> {
        Err(
            "Discord resumes after the last event the bot acknowledged (its sequence number): an event it saw is not served again",
        )
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let server = self.0.clone();
        blocking(move || server.wait_sent(n, wait()))
            .await
            .into_iter()
            .map(|s| Reply {
                to: s.channel_id,
                sent_len: s.content.chars().count(),
                text: s.content,
            })
            .collect()
    }
}

/// Slack's Socket Mode and Web API.
pub(crate) struct Slack(Shared<lurkbot_test_support::slack_server::SlackServer>);

impl Slack {
    const BOT: &'static str = "xoxb-contract";
    const APP: &'static str = "xapp-contract";

    pub(crate) fn new() -> Self {
        Self(Arc::new(
            lurkbot_test_support::slack_server::SlackServer::start(Self::BOT, Self::APP),
        ))
    }
}

impl Platform for Slack {
    const NAME: &'static str = "slack";
    const LIMIT: usize = 4000;

    fn settings(&self) -> (String, String) {
        (
            format!(
                "base_url = \"{}\"\nallow_from = [\"UOWNER\"]\n",
                self.0.url()
            ),
            format!(
                "SLACK_BOT_TOKEN={}\nSLACK_APP_TOKEN={}\n",
                Self::BOT,
                Self::APP
            ),
        )
    }

    fn owner(&self) -> String {
        "DOWNER".into()
    }

    async fn ready(&self, _gw: &Gateway) {
        let server = self.0.clone();
        assert!(
            blocking(move || server.wait_connections(1, wait())).await,
            "never connected"
        );
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        if owner {
            self.0.user_writes("DOWNER", "im", "UOWNER", text, None)
        } else {
            self.0
                .user_writes("DSTRANGER", "im", "USTRANGER", text, None)
        }
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str> {
        let text = if mention {
            format!("<@{}> {text}", lurkbot_test_support::slack_server::BOT_USER)
        } else {
            text.to_string()
        };
        self.0
            .user_writes("CGROUP", "channel", "UOWNER", &text, None);
        Ok(())
    }

    async fn serve_again(&self, _gw: &Gateway, _id: &str) -> Result<(), &'static str> {
        Err(
            "Slack delivers again only an envelope not acknowledged, and the channel acknowledges each once recorded",
        )
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let server = self.0.clone();
        blocking(move || server.wait_posted(n, wait()))
            .await
            .into_iter()
            .map(|p| Reply {
                to: p.channel,
                sent_len: p.text.chars().count(),
                text: p
                    .text
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&amp;", "&"),
            })
            .collect()
    }
}
