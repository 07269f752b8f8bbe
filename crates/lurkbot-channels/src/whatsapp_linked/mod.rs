//! WhatsApp as a linked device (`[channels.whatsapp] mode = "linked"`, ARCHITECTURE.md
//! §6.1.1): LurkBot is one of the account's devices, as WhatsApp Web is, through the
//! `whatsapp-rust` client of the multi-device protocol. Its keys and sessions live in the state
//! store ([`keys`]), its sockets are the binary's own (`wire.rs`), and the channel connects on
//! its first receive — on the gateway holding the channel's lease only.
//!
//! Nothing is lost: the client hands each batch of decrypted messages to the durability hook
//! here, which passes it to the channel loop and answers only once the loop has recorded it
//! ([`crate::Channel::acknowledge`]); only then does the client acknowledge the messages to
//! WhatsApp, so a gateway killed in between has them delivered again (and the record keeps
//! them from being answered twice). Replies carry a message id made from the outbox entry, so
//! a retried send is the same message.

pub mod inbound;
pub mod keys;
mod keys_tables;
pub mod phone;
mod wire;

/// The client crate, for what is built on its types (the keys' tests drive its store traits).
pub use whatsapp_rust as client;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use whatsapp_rust::bot::{Bot, BotHandle};
use whatsapp_rust::pair_code::PairCodeOptions;
use whatsapp_rust::prelude::TokioRuntime;
use whatsapp_rust::types::events::{Event, InboundMessage};
use whatsapp_rust::{Client, InboundDurabilityHook, async_trait};

use crate::whatsapp_text::whatsapp_text;
use crate::{BoxFuture, Channel, ChannelError, Inbound, LinkState, Picture, VoiceNote};
use inbound::{OwnIds, inbound_of};
use keys::StoredKeys;
use phone::{Phone, Received};

/// The longest message WhatsApp shows whole (it accepts more; long replies are cut here).
const MAX_CHARS: usize = 4096;
/// Received messages kept for quoting and downloading their media.
const KEEP_RECEIVED: usize = 512;
/// How long a batch waits to be recorded before the client is told to have it redelivered.
const RECORD_WITHIN: Duration = Duration::from_secs(30);

/// A batch handed to the channel loop, and the answer it waits for.
type Handed = (Vec<Inbound>, oneshot::Sender<()>);

/// What the channel, its hook and its event handler share.
struct Shared {
    handed: mpsc::Sender<Handed>,
    waiting: Mutex<Option<(oneshot::Sender<()>, Vec<Inbound>)>>,
    phone: Mutex<Option<Arc<dyn Phone>>>,
    own: Mutex<OwnIds>,
    received: Mutex<(HashMap<String, Received>, VecDeque<String>)>,
    link: watch::Sender<LinkState>,
    /// Why the connection is not known alive (the client's keep-alive pings found it dead,
    /// or WhatsApp closed it) until it connects again.
    stale: crate::stale::Stale,
}

impl Shared {
    fn phone(&self) -> Result<Arc<dyn Phone>, ChannelError> {
        self.phone
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .ok_or_else(|| ChannelError::Transient("WhatsApp is not connected yet".into()))
    }

    fn received(&self, id: &str) -> Option<Received> {
        self.received.lock().ok()?.0.get(id).cloned()
    }

    fn keep(&self, id: String, received: Received) {
        if let Ok(mut kept) = self.received.lock() {
            let (map, order) = &mut *kept;
            if map.insert(id.clone(), received).is_none() {
                order.push_back(id);
            }
            while order.len() > KEEP_RECEIVED {
                if let Some(old) = order.pop_front() {
                    map.remove(&old);
                }
            }
        }
    }

    fn set_stale(&self, why: Option<String>) {
        self.stale.set(why);
    }

    fn set_link(&self, state: &str, change: impl FnOnce(&mut LinkState)) {
        self.link.send_modify(|link| {
            let account = link.account.take();
            *link = LinkState {
                state: state.to_string(),
                account,
                ..LinkState::default()
            };
            change(link);
        });
    }

    /// Turns the client's decrypted messages into the channel's and waits until the channel
    /// loop has recorded them; an error has WhatsApp deliver them again.
    async fn hand_over(&self, batch: &[InboundMessage]) -> Result<(), ChannelError> {
        let own = self.own.lock().map(|o| o.clone()).unwrap_or_default();
        let mut messages = Vec::new();
        for item in batch {
            let Some(message) = inbound_of(&item.message, &item.info, &own) else {
                continue;
            };
            let received = Received {
                message: item.message.clone(),
                chat: item.info.source.chat.clone(),
                sender: item.info.source.sender.clone(),
            };
            self.keep(message.message_id.clone(), received);
            messages.push(message);
        }
        if messages.is_empty() {
            return Ok(());
        }
        let (recorded, wait) = oneshot::channel();
        self.handed
            .send((messages, recorded))
            .await
            .map_err(|_| ChannelError::Transient("the channel is not receiving".into()))?;
        match tokio::time::timeout(RECORD_WITHIN, wait).await {
            Ok(Ok(())) => Ok(()),
            _ => Err(ChannelError::Transient(
                "the batch was not recorded in time: WhatsApp delivers it again".into(),
            )),
        }
    }

    /// Follows the client's connection: the QR or pairing code while linking, the bot's own
    /// ids once connected, and a log-out as the end.
    fn on_event(&self, event: &Event, client: Option<&Arc<Client>>) {
        match event {
            Event::PairingQrCode(qr) => {
                let code = qr.code.clone();
                self.set_link("qr", |link| {
                    link.qr_svg = crate::qr::svg(&code);
                    link.qr = Some(code);
                });
            }
            Event::PairingCode(code) => {
                let code = code.code.clone();
                self.set_link("pairCode", |link| link.pair_code = Some(code));
            }
            Event::Connected(_) => {
                self.set_stale(None);
                let Some(client) = client else {
                    return;
                };
                let phone: Arc<dyn Phone> = Arc::new(client.clone());
                if let Ok(mut slot) = self.phone.lock() {
                    *slot = Some(phone);
                }
                let device = client.persistence_manager().get_device_snapshot();
                let ids = OwnIds {
                    phone: device.pn.as_ref().map(|j| j.user.to_string()),
                    lid: device.lid.as_ref().map(|j| j.user.to_string()),
                };
                let account = ids.phone.as_ref().map(|p| format!("+{p}"));
                if let Ok(mut own) = self.own.lock() {
                    *own = ids;
                }
                self.set_link("linked", |link| link.account = account);
            }
            Event::LoggedOut(out) => {
                if let Ok(mut slot) = self.phone.lock() {
                    *slot = None;
                }
                let why = format!("{:?}", out.reason);
                tracing::warn!(reason = %why, "WhatsApp logged this device out");
                self.set_link("loggedOut", |_| {});
            }
            // The client's keep-alive pings WhatsApp and drops a socket that stops answering;
            // it then reconnects by itself. Until it has, the channel is stale.
            Event::Disconnected(gone) if self.phone.lock().is_ok_and(|p| p.is_some()) => {
                self.set_stale(Some(format!(
                    "the connection to WhatsApp dropped ({}): reconnecting",
                    gone.reason
                )));
            }
            Event::StreamReplaced(_) => self.set_stale(Some(
                "another WhatsApp Web session of this device took the connection over".into(),
            )),
            Event::TemporaryBan(ban) => self.set_stale(Some(format!(
                "WhatsApp banned this number for {} s: {}",
                ban.expire.num_seconds(),
                ban.code
            ))),
            Event::PairingQrCodesExhausted(_) => {
                self.set_link("unlinked", |_| {});
            }
            _ => {}
        }
    }
}

/// The client's durability hook: a batch is answered once the channel loop recorded it.
struct Hook(Arc<Shared>);

#[async_trait]
impl InboundDurabilityHook for Hook {
    async fn on_messages(
        &self,
        _client: Arc<Client>,
        batch: &[InboundMessage],
    ) -> whatsapp_rust::anyhow::Result<()> {
        self.0
            .hand_over(batch)
            .await
            .map_err(|e| whatsapp_rust::anyhow::anyhow!("{e}"))
    }
}

/// WhatsApp through a linked device.
pub struct WhatsAppLinked {
    shared: Arc<Shared>,
    inbox: tokio::sync::Mutex<mpsc::Receiver<Handed>>,
    keys: StoredKeys,
    pair_phone: Option<String>,
    endpoint: Option<String>,
    network: lurkbot_term::NetworkPolicy,
    connection: tokio::sync::Mutex<Option<BotHandle>>,
}

impl WhatsAppLinked {
    /// The channel, its device kept in `keys`; `pair_phone` (digits of a phone number) asks
    /// for a pairing code instead of a QR code while it is not linked.
    pub fn new(keys: StoredKeys, pair_phone: Option<String>) -> Self {
        let (handed, inbox) = mpsc::channel(16);
        let (link, _) = watch::channel(LinkState {
            state: "unlinked".into(),
            ..LinkState::default()
        });
        let shared = Arc::new(Shared {
            handed,
            waiting: Mutex::new(None),
            phone: Mutex::new(None),
            own: Mutex::new(OwnIds::default()),
            received: Mutex::new((HashMap::new(), VecDeque::new())),
            link,
            stale: crate::stale::Stale::default(),
        });
        Self {
            shared,
            inbox: tokio::sync::Mutex::new(inbox),
            keys,
            pair_phone,
            endpoint: None,
            network: lurkbot_term::NetworkPolicy {
                allow_private: false,
                allow_hosts: Vec::new(),
            },
            connection: tokio::sync::Mutex::new(None),
        }
    }

    /// Holds the client's HTTP requests (media by URL, uploads) to `policy` — the gate's rules
    /// for URLs that did not come from the owner's settings; public hosts only by default.
    #[must_use]
    pub fn with_network(mut self, policy: lurkbot_term::NetworkPolicy) -> Self {
        self.network = policy;
        self
    }

    /// Connects to `url` (`[channels.whatsapp] base_url`: a relay) instead of WhatsApp's
    /// `wss://web.whatsapp.com/ws/chat`.
    #[must_use]
    pub fn with_endpoint(mut self, url: Option<&str>) -> Self {
        self.endpoint = url.map(str::to_string);
        self
    }

    /// The link's changes (the login command follows them).
    pub fn watch_link(&self) -> watch::Receiver<LinkState> {
        self.shared.link.subscribe()
    }

    /// Connects (once): the client then links the device or resumes its session, and
    /// reconnects by itself with back-off.
    ///
    /// # Errors
    /// The client could not be built (its HTTP client, or the store).
    pub async fn connect(&self) -> Result<(), ChannelError> {
        let mut connection = self.connection.lock().await;
        if connection.is_some() {
            return Ok(());
        }
        let events = self.shared.clone();
        let mut builder = Bot::builder()
            .with_backend(self.keys.clone())
            .with_transport_factory(wire::Dialer::new(self.endpoint.as_deref()))
            .with_http_client(wire::Fetcher::new(self.network.clone())?)
            .with_runtime(TokioRuntime)
            .skip_history_sync()
            .with_inbound_durability_hook(Hook(self.shared.clone()))
            .on_event(move |event, client| {
                events.on_event(&event, Some(&client));
                async {}
            });
        if let Some(phone) = &self.pair_phone {
            builder = builder.with_pair_code(PairCodeOptions {
                phone_number: phone.clone(),
                show_push_notification: true,
                ..PairCodeOptions::default()
            });
        }
        let bot = builder
            .build()
            .await
            .map_err(|e| ChannelError::Permanent(format!("WhatsApp client: {e}")))?;
        *connection = Some(bot.spawn());
        Ok(())
    }

    /// Disconnects (the gateway's stop, or the login command once linked).
    pub async fn disconnect(&self) {
        if let Some(handle) = self.connection.lock().await.take() {
            handle.shutdown().await;
        }
    }

    /// Unlinks the device from the account (when connected) and forgets its keys.
    ///
    /// # Errors
    /// The store could not delete them.
    pub async fn logout(&self) -> Result<usize, lurkbot_state::StateError> {
        if let Some(handle) = self.connection.lock().await.take() {
            handle.client().logout().await;
            handle.shutdown().await;
        }
        self.keys.forget()
    }

    /// Uses `phone` as the connected client: the tests' way in at the client's boundary.
    #[doc(hidden)]
    pub fn attach(&self, phone: Arc<dyn Phone>, own: OwnIds) {
        if let Ok(mut slot) = self.shared.phone.lock() {
            *slot = Some(phone);
        }
        if let Ok(mut slot) = self.shared.own.lock() {
            *slot = own;
        }
    }

    /// Hands `batch` over as the client's durability hook does (the tests' way in): answers
    /// once the channel loop recorded it.
    ///
    /// # Errors
    /// Not recorded in time, or the channel is not receiving.
    #[doc(hidden)]
    pub async fn deliver(&self, batch: &[InboundMessage]) -> Result<(), ChannelError> {
        self.shared.hand_over(batch).await
    }

    /// Follows one of the client's events as the connection does (the tests' way in).
    #[doc(hidden)]
    pub fn follow(&self, event: &Event) {
        self.shared.on_event(event, None);
    }

    fn logged_out(&self) -> bool {
        self.shared.link.borrow().state == "loggedOut"
    }
}

/// The message id of a reply piece: WhatsApp's own form (`3EB0` and hex), made from the
/// outbox entry's key so that a send repeated after a crash is the same message.
pub fn message_id_for(key: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    let hex: String = digest.as_ref()[..9]
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    format!("3EB0{hex}")
}

impl Channel for WhatsAppLinked {
    fn name(&self) -> &'static str {
        "whatsapp"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        whatsapp_text(markdown)
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            if self.logged_out() {
                return Err(ChannelError::Permanent(
                    "WhatsApp logged this device out: run `lurkbot channels login whatsapp` \
                     to link it again"
                        .into(),
                ));
            }
            let attached = self.shared.phone.lock().is_ok_and(|p| p.is_some());
            if !attached {
                self.connect().await?;
            }
            let mut link = self.shared.link.subscribe();
            let mut inbox = self.inbox.lock().await;
            let (batch, recorded) = loop {
                tokio::select! {
                    handed = inbox.recv() => match handed {
                        Some(handed) => break handed,
                        None => return Err(ChannelError::Permanent("the client is gone".into())),
                    },
                    changed = link.changed() => {
                        if changed.is_err() || self.logged_out() {
                            return Ok(Vec::new());
                        }
                    }
                }
            };
            if let Ok(mut waiting) = self.shared.waiting.lock() {
                *waiting = Some((recorded, batch.clone()));
            }
            Ok(batch)
        })
    }

    /// Tells the client the batch is recorded (it then acknowledges it to WhatsApp) and
    /// marks its messages read.
    fn acknowledge(&self) {
        let waiting = self.shared.waiting.lock().ok().and_then(|mut w| w.take());
        let Some((recorded, batch)) = waiting else {
            return;
        };
        let _ = recorded.send(());
        if let Ok(phone) = self.shared.phone() {
            tokio::spawn(async move {
                for message in &batch {
                    let sender = if message.group {
                        format!("{}@s.whatsapp.net", message.sender)
                    } else {
                        message.chat.clone()
                    };
                    phone
                        .read(&message.chat, &sender, &message.message_id)
                        .await;
                }
            });
        }
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move { self.send_once(chat, text, reply_to, "").await.map(|_| ()) })
    }

    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            let phone = self.shared.phone()?;
            let quoted = reply_to.and_then(|id| Some((id, self.shared.received(id)?)));
            let quote = quoted.as_ref().map(|(id, received)| (*id, received));
            let id = (!key.is_empty()).then(|| message_id_for(key));
            let sent = phone.send_text(chat, text, quote, id.as_deref()).await?;
            Ok(Some(sent))
        })
    }

    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Ok(phone) = self.shared.phone() {
                phone.typing(chat).await;
            }
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: VoiceNote<'a>,
        _reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let phone = self.shared.phone()?;
            // Whole seconds, rounded up (a note under a second still shows 1 s).
            let seconds = note.seconds.max(0.0).ceil().min(f64::from(u32::MAX)) as u32;
            phone.send_voice(chat, note.ogg.to_vec(), seconds).await?;
            Ok(())
        })
    }

    fn send_picture<'a>(
        &'a self,
        chat: &'a str,
        picture: Picture<'a>,
        _reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let phone = self.shared.phone()?;
            phone
                .send_picture(chat, picture.bytes.to_vec(), picture.mime)
                .await?;
            Ok(())
        })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.disconnect())
    }

    fn stale(&self) -> Option<String> {
        self.shared.stale.get()
    }

    fn link(&self) -> Option<LinkState> {
        Some(self.shared.link.borrow().clone())
    }

    fn media_bytes<'a>(
        &'a self,
        file: &'a str,
        max: u64,
    ) -> BoxFuture<'a, Option<Result<Vec<u8>, ChannelError>>> {
        Box::pin(async move {
            let result = async {
                let received = self.shared.received(file).ok_or_else(|| {
                    ChannelError::Permanent("the message is no longer at hand".into())
                })?;
                let bytes = self.shared.phone()?.download(&received.message).await?;
                if bytes.len() as u64 > max {
                    return Err(ChannelError::Permanent(format!(
                        "{} bytes, over the {max}-byte limit",
                        bytes.len()
                    )));
                }
                Ok(bytes)
            };
            Some(result.await)
        })
    }
}
