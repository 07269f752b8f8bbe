//! The channels that run, by name, as the rest of the gateway sees them: what the session
//! host holds to deliver (the `message` tool, cron `announce`, the heartbeat, the outbox),
//! without the loop that fills it (`mod.rs`, `receive.rs`).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use lurkbot_channels::ChannelStatus;
use lurkbot_channels::delivery::{RetryPolicy, deliver};

use crate::channels::live::Live;

/// The running channels, by name.
#[derive(Default)]
pub(crate) struct ChannelSet {
    running: Mutex<BTreeMap<&'static str, Arc<Live>>>,
    /// Why an enabled channel could not be started (its credentials, its settings).
    refused: Mutex<BTreeMap<&'static str, String>>,
    /// Where the IRC forwarder hands the IRC line's messages (`[channels.irc]`).
    irc_line: Mutex<Option<tokio::sync::mpsc::UnboundedSender<lurkbot_term::InboundMessage>>>,
    /// Outbox entries being sent now (`outbox.rs`).
    pub(crate) in_flight: InFlight,
    /// WhatsApp's Cloud API webhook, while that channel runs (`api/whatsapp.rs` serves it).
    whatsapp: Mutex<Option<Arc<lurkbot_channels::whatsapp::CloudWebhook>>>,
}

impl ChannelSet {
    fn get(&self, name: &str) -> Option<Arc<Live>> {
        self.running.lock().ok()?.get(name).cloned()
    }

    /// The running channel `name`.
    pub(crate) fn live(&self, name: &str) -> Option<Arc<Live>> {
        self.get(name)
    }

    /// Starts `live` under `name`.
    pub(crate) fn insert(&self, name: &'static str, live: Arc<Live>) {
        if let Ok(mut running) = self.running.lock() {
            running.insert(name, live);
        }
    }

    /// When each running channel last received, in Unix seconds (those that have).
    pub(crate) fn last_receives(&self) -> Vec<(&'static str, f64)> {
        self.running
            .lock()
            .map(|running| {
                running
                    .iter()
                    .filter_map(|(name, live)| Some((*name, live.last_receive_seconds()?)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stops what each running channel runs beside its connection (signal-cli, WhatsApp's
    /// device connection), at the gateway's stop.
    pub(crate) async fn stop_all(&self) {
        let running: Vec<Arc<Live>> = self
            .running
            .lock()
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default();
        for live in running {
            live.channel().stop().await;
        }
    }

    /// Routes Meta's webhook requests to `webhook` from now on.
    pub(crate) fn set_whatsapp_webhook(
        &self,
        webhook: Arc<lurkbot_channels::whatsapp::CloudWebhook>,
    ) {
        if let Ok(mut held) = self.whatsapp.lock() {
            *held = Some(webhook);
        }
    }

    /// WhatsApp's Cloud API webhook, when that channel runs here.
    pub(crate) fn whatsapp_webhook(&self) -> Option<Arc<lurkbot_channels::whatsapp::CloudWebhook>> {
        self.whatsapp.lock().ok()?.clone()
    }

    /// Records why `name` could not be started (`channels.status` shows it).
    pub(crate) fn refuse(&self, name: &'static str, why: String) {
        if let Ok(mut refused) = self.refused.lock() {
            refused.insert(name, why);
        }
    }

    /// Why `name` could not be started, if it was refused.
    pub(crate) fn refused(&self, name: &str) -> Option<String> {
        self.refused.lock().ok()?.get(name).cloned()
    }

    /// Where the IRC forwarder is to hand the IRC line's messages from now on.
    pub(crate) fn set_irc_line(
        &self,
        line: tokio::sync::mpsc::UnboundedSender<lurkbot_term::InboundMessage>,
    ) {
        if let Ok(mut held) = self.irc_line.lock() {
            *held = Some(line);
        }
    }

    /// Hands a message of the IRC line to its channel; false when no IRC channel runs.
    pub(crate) fn to_irc_line(&self, message: lurkbot_term::InboundMessage) -> bool {
        self.irc_line
            .lock()
            .ok()
            .and_then(|line| line.as_ref().map(|tx| tx.send(message).is_ok()))
            .unwrap_or(false)
    }

    /// Whether `name` runs.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Each running channel's state.
    pub(crate) fn statuses(&self) -> Vec<(String, ChannelStatus)> {
        self.running
            .lock()
            .map(|running| {
                running
                    .iter()
                    .filter_map(|(name, live)| {
                        let mut status = live.status.lock().ok()?.clone();
                        status.link = live.channel().link();
                        if matches!(status.state.as_str(), "starting" | "connected")
                            && let Some(why) = live.channel().stale()
                        {
                            status.state = "stale".into();
                            status.last_error = Some(why);
                        }
                        Some((name.to_string(), status))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Sends `text` to `chat` on channel `name`; where it went.
    ///
    /// # Errors
    /// The channel does not run, or the platform refused the message (after its retries).
    pub(crate) async fn deliver(
        &self,
        name: &str,
        chat: &str,
        text: &str,
        reply_to: Option<&str>,
    ) -> Result<String, String> {
        let live = self
            .get(name)
            .ok_or_else(|| format!("the {name} channel is not running (see [channels.{name}])"))?;
        send(&live, chat, text, reply_to).await?;
        Ok(format!("{name} {chat}"))
    }
}

/// Sends `text` to `chat` on `live` with the platform's retries; the failure is shown in its
/// status.
pub(crate) async fn send(
    live: &Live,
    chat: &str,
    text: &str,
    reply_to: Option<&str>,
) -> Result<(), String> {
    match deliver(&*live.channel, chat, text, reply_to, RetryPolicy::default()).await {
        Ok(n) => {
            live.update(|s| s.sent += n as u64);
            Ok(())
        }
        Err(e) => {
            let message = format!("{} message to {chat} not sent: {e}", live.channel.name());
            tracing::warn!(channel = live.channel.name(), chat, error = %e, "message not sent");
            live.update(|s| s.last_error = Some(message.clone()));
            Err(message)
        }
    }
}

/// The outbox entries being sent now (a pass skips them).
#[derive(Default)]
pub(crate) struct InFlight(Mutex<HashSet<String>>);

impl InFlight {
    /// Marks `id` as being sent; false when it already is.
    pub(crate) fn take(&self, id: &str) -> bool {
        self.0.lock().is_ok_and(|mut s| s.insert(id.to_string()))
    }

    /// Marks `id` as no longer being sent.
    pub(crate) fn release(&self, id: &str) {
        if let Ok(mut s) = self.0.lock() {
            s.remove(id);
        }
    }
}
