//! The platforms of the contract suite (`contract.rs`) that run as real servers here: Matrix
//! (Synapse), e-mail (Dovecot and an SMTP server) and IRC (ngircd).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use lurkbot_test_support::irc_server::{IrcOptions, IrcPeer, IrcServer};
use lurkbot_test_support::mail_server::MailServer;
use lurkbot_test_support::matrix_user::{MatrixUser, enc};
use lurkbot_test_support::synapse::Synapse;

use crate::common::Gateway;
use crate::contract::{Platform, Reply, Shared, blocking, connected, wait};

/// The owner's and a stranger's accounts and their direct rooms with the bot.
struct Rooms {
    owner: MatrixUser,
    stranger: MatrixUser,
    owner_room: String,
    stranger_room: String,
}

/// Matrix through a real Synapse.
pub(crate) struct Matrix {
    synapse: Synapse,
    rooms: OnceLock<Rooms>,
    /// A room of three (the owner, a stranger, the bot), made when first written in.
    group: tokio::sync::OnceCell<String>,
}

impl Matrix {
    const BOT: &'static str = "@bot:localhost";

    pub(crate) fn new() -> Self {
        let synapse = tokio::task::block_in_place(|| {
            let s = Synapse::start();
            for (user, password) in [
                ("bot", "bot-pass-1"),
                ("owner", "owner-pass-1"),
                ("stranger", "stranger-pass-1"),
            ] {
                s.register(user, password);
            }
            s
        });
        Self {
            synapse,
            rooms: OnceLock::new(),
            group: tokio::sync::OnceCell::new(),
        }
    }

    fn rooms(&self) -> &Rooms {
        self.rooms.get().unwrap_or_else(|| panic!("not ready"))
    }

    /// The bot's messages in `room`: (when, body), oldest first.
    async fn bot_said(user: &MatrixUser, room: &str) -> Vec<(u64, String)> {
        let page = user
            .call(
                reqwest::Method::GET,
                &format!(
                    "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=100",
                    enc(room)
                ),
                None,
            )
            .await;
        let mut out: Vec<(u64, String)> = page["chunk"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["type"] == "m.room.message" && e["sender"] == Self::BOT)
            .filter_map(|e| {
                Some((
                    e["origin_server_ts"].as_u64()?,
                    e["content"]["body"].as_str()?.to_string(),
                ))
            })
            .collect();
        out.reverse();
        out
    }
}

impl Platform for Matrix {
    const NAME: &'static str = "matrix";
    const LIMIT: usize = lurkbot_channels::matrix::MAX_CHARS;

    fn settings(&self) -> (String, String) {
        (
            format!(
                "base_url = \"{}\"\nallow_from = [\"@owner:localhost\"]\n",
                self.synapse.url
            ),
            "MATRIX_USER=bot\nMATRIX_PASSWORD=bot-pass-1\n".into(),
        )
    }

    fn owner(&self) -> String {
        self.rooms().owner_room.clone()
    }

    async fn ready(&self, _gw: &Gateway) {
        let owner = MatrixUser::login(&self.synapse, "owner", "owner-pass-1").await;
        let stranger = MatrixUser::login(&self.synapse, "stranger", "stranger-pass-1").await;
        // Direct rooms the bot joins: the owner's, and a stranger's (to get a pairing code).
        let owner_room = owner.create_room(&[Self::BOT], true).await;
        let stranger_room = stranger.create_room(&[Self::BOT], true).await;
        owner.wait_joined(&owner_room, Self::BOT).await;
        stranger.wait_joined(&stranger_room, Self::BOT).await;
        let _ = self.rooms.set(Rooms {
            owner,
            stranger,
            owner_room,
            stranger_room,
        });
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        let rooms = self.rooms();
        if owner {
            rooms.owner.say(&rooms.owner_room, text).await;
        } else {
            rooms.stranger.say(&rooms.stranger_room, text).await;
        }
        String::new()
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str> {
        let rooms = self.rooms();
        let group = self
            .group
            .get_or_init(|| async {
                let room = rooms
                    .owner
                    .create_room(&[Self::BOT, &rooms.stranger.id], false)
                    .await;
                rooms.stranger.join(&room).await;
                rooms.owner.wait_joined(&room, Self::BOT).await;
                rooms.owner.wait_joined(&room, &rooms.stranger.id).await;
                room
            })
            .await;
        // Named by its localpart, as people write it.
        let text = if mention {
            format!("bot, {text}")
        } else {
            text.to_string()
        };
        rooms.owner.say(group, &text).await;
        Ok(())
    }

    async fn serve_again(&self, _gw: &Gateway, _id: &str) -> Result<(), &'static str> {
        Err(
            "Synapse serves events again only to a client that lost its sync position: the bot keeps it once a batch is recorded (a restart re-reading it is tests/matrix.rs's)",
        )
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let rooms = self.rooms();
        let deadline = Instant::now() + wait();
        loop {
            let mut all: Vec<(u64, Reply)> = Vec::new();
            let mut seen = vec![
                (&rooms.owner, &rooms.owner_room),
                (&rooms.stranger, &rooms.stranger_room),
            ];
            if let Some(group) = self.group.get() {
                seen.push((&rooms.owner, group));
            }
            for (user, room) in seen {
                all.extend(
                    Self::bot_said(user, room)
                        .await
                        .into_iter()
                        .map(|(at, text)| {
                            let reply = Reply {
                                to: room.clone(),
                                sent_len: text.chars().count(),
                                text,
                            };
                            (at, reply)
                        }),
                );
            }
            if all.len() >= n || Instant::now() > deadline {
                all.sort_by_key(|(at, _)| *at);
                return all.into_iter().map(|(_, r)| r).collect();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// E-mail through a real Dovecot (IMAP) and SMTP submission server.
pub(crate) struct Email {
    server: Shared<MailServer>,
    sent: Mutex<HashMap<String, (bool, String)>>,
    count: AtomicU64,
}

impl Email {
    const USERS: [(&'static str, &'static str); 3] = [
        ("bot@localhost", "bot-pass"),
        ("owner@localhost", "owner-pass"),
        ("stranger@localhost", "stranger-pass"),
    ];

    pub(crate) fn new() -> Self {
        Self {
            server: Arc::new(tokio::task::block_in_place(|| {
                MailServer::start(&Self::USERS)
            })),
            sent: Mutex::default(),
            count: AtomicU64::new(0),
        }
    }

    /// Mails the bot as the owner or the stranger, with Message-ID `id`.
    async fn mail(&self, owner: bool, text: String, id: String) {
        let server = self.server.clone();
        let (from, password) = Self::USERS[if owner { 1 } else { 2 }];
        blocking(move || server.send(from, password, "Hi", &text, &id, &[])).await;
    }
}

impl Platform for Email {
    const NAME: &'static str = "email";
    const LIMIT: usize = lurkbot_channels::email::MAX_CHARS;

    fn settings(&self) -> (String, String) {
        (
            "allow_from = [\"owner@localhost\"]\ntrusted_authserv_id = \"mail.test\"\n".into(),
            format!(
                "EMAIL_IMAP_URL=imap://127.0.0.1:{}\nEMAIL_SMTP_URL=smtp://127.0.0.1:{}\nEMAIL_USER=bot@localhost\nEMAIL_PASSWORD=bot-pass\nEMAIL_FROM=bot@localhost\n",
                self.server.imap_port, self.server.smtp_port
            ),
        )
    }

    fn owner(&self) -> String {
        "owner@localhost".into()
    }

    async fn ready(&self, gw: &Gateway) {
        // The first look skips mail already there: write only once it has looked.
        connected(gw, Self::NAME).await;
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        let id = format!(
            "<contract{}@localhost>",
            self.count.fetch_add(1, Ordering::Relaxed)
        );
        if let Ok(mut sent) = self.sent.lock() {
            sent.insert(id.clone(), (owner, text.to_string()));
        }
        self.mail(owner, text.to_string(), id.clone()).await;
        id
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        _mention: bool,
        _text: &str,
    ) -> Result<(), &'static str> {
        Err("e-mail has no group chats: a mail to several people is answered to its sender")
    }

    async fn serve_again(&self, _gw: &Gateway, id: &str) -> Result<(), &'static str> {
        // The same mail delivered twice (an SMTP retry after a lost answer): a new UID, the
        // same Message-ID.
        let (owner, text) = self
            .sent
            .lock()
            .ok()
            .and_then(|s| s.get(id).cloned())
            .unwrap_or_else(|| panic!("{id} was never sent"));
        self.mail(owner, text, id.to_string()).await;
        Ok(())
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let server = self.server.clone();
        blocking(move || {
            let deadline = Instant::now() + wait();
            loop {
                let mut all = Vec::new();
                for (user, password) in &Self::USERS[1..] {
                    all.extend(server.inbox(user, password, 0).into_iter().map(|mail| {
                        let text = mail["body"].as_str().unwrap_or_default().to_string();
                        Reply {
                            to: (*user).to_string(),
                            sent_len: text.chars().count(),
                            text,
                        }
                    }));
                }
                if all.len() >= n || Instant::now() > deadline {
                    return all;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
        .await
    }
}

/// IRC through a real ngircd, the owner and a stranger as raw clients.
pub(crate) struct Irc {
    server: IrcServer,
    /// Whether the owner is in the bot's channel with it.
    joined: Shared<std::sync::atomic::AtomicBool>,
    peers: Shared<Mutex<Vec<IrcPeer>>>,
    seen: Shared<Mutex<Vec<Reply>>>,
}

impl Irc {
    pub(crate) fn new() -> Self {
        let server = tokio::task::block_in_place(|| IrcServer::start(&IrcOptions::default()));
        let peers = tokio::task::block_in_place(|| {
            vec![
                IrcPeer::connect(server.port, "ada", None),
                IrcPeer::connect(server.port, "eve", None),
            ]
        });
        Self {
            server,
            peers: Arc::new(Mutex::new(peers)),
            seen: Arc::default(),
            joined: Arc::default(),
        }
    }
}

impl Platform for Irc {
    const NAME: &'static str = "irc";
    /// A whole line as the recipient reads it, prefix and CR LF included (RFC 2812).
    const LIMIT: usize = 512;

    fn settings(&self) -> (String, String) {
        ("allow_from = [\"ada\"]\n".into(), String::new())
    }

    fn files(&self) -> Vec<(&'static str, String)> {
        vec![(
            "skills/irc-cli/secrets/.env",
            format!(
                "IRC_SERVER=127.0.0.1\nIRC_PORT={}\nIRC_TLS=0\nIRC_CHANNEL=\"#lurk\"\nIRC_NICK=lurkbot\n",
                self.server.port
            ),
        )]
    }

    fn owner(&self) -> String {
        "ada".into()
    }

    async fn ready(&self, gw: &Gateway) {
        connected(gw, Self::NAME).await;
    }

    async fn writes(&self, _gw: &Gateway, owner: bool, text: &str) -> String {
        let (peers, text) = (self.peers.clone(), text.to_string());
        blocking(move || {
            if let Ok(mut peers) = peers.lock() {
                peers[usize::from(!owner)].say("lurkbot", &text);
            }
        })
        .await;
        String::new()
    }

    async fn writes_in_group(
        &self,
        _gw: &Gateway,
        mention: bool,
        text: &str,
    ) -> Result<(), &'static str> {
        let (peers, joined) = (self.peers.clone(), self.joined.clone());
        let text = if mention {
            format!("lurkbot: {text}")
        } else {
            text.to_string()
        };
        blocking(move || {
            let Ok(mut peers) = peers.lock() else { return };
            let owner = &mut peers[0];
            if !joined.swap(true, Ordering::SeqCst) {
                owner.join("#lurk", None);
                // Until the bot is in the channel too.
                let deadline = Instant::now() + wait();
                loop {
                    owner.raw("NAMES #lurk");
                    let lines = owner.lines_until(|l| l.contains(" 366 "));
                    if lines
                        .iter()
                        .any(|l| l.contains(" 353 ") && l.contains("lurkbot"))
                    {
                        break;
                    }
                    assert!(Instant::now() < deadline, "the bot never joined #lurk");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            owner.say("#lurk", &text);
        })
        .await;
        Ok(())
    }

    async fn serve_again(&self, _gw: &Gateway, _id: &str) -> Result<(), &'static str> {
        Err(
            "IRC has no message ids and no acknowledgement: a server never sends a line again (one lost with a dropped link is lost)",
        )
    }

    async fn replies(&self, n: usize) -> Vec<Reply> {
        let (peers, seen) = (self.peers.clone(), self.seen.clone());
        blocking(move || {
            let deadline = Instant::now() + wait();
            loop {
                if let (Ok(mut peers), Ok(mut seen)) = (peers.lock(), seen.lock()) {
                    for peer in peers.iter_mut() {
                        while let Some(line) = peer.try_line(Duration::from_millis(50)) {
                            // `:lurkbot!user@host PRIVMSG target :text`
                            let mut words = line.splitn(4, ' ');
                            let (from, command, target) =
                                (words.next(), words.next(), words.next());
                            if from.is_some_and(|f| f.starts_with(":lurkbot!"))
                                && command == Some("PRIVMSG")
                                && let (Some(target), Some(text)) = (target, words.next())
                            {
                                seen.push(Reply {
                                    to: target.to_string(),
                                    text: text.strip_prefix(':').unwrap_or(text).to_string(),
                                    sent_len: line.len() + 2,
                                });
                            }
                        }
                    }
                    if seen.len() >= n || Instant::now() > deadline {
                        return seen.clone();
                    }
                }
            }
        })
        .await
    }
}
