//! Sending what the outbox holds (ARCHITECTURE.md §6.3): a message recorded before it is sent
//! goes out piece by piece, each piece recorded once the platform took it (with its id), under
//! the platform's idempotency key where it has one. A transient failure leaves it pending — the
//! next pass (every minute, and at start) sends the rest; a permanent one marks it failed,
//! kept for `lurkbot outbox`, `status` and the web UI.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_channels::delivery::{RetryPolicy, deliver_from, deliver_picture, deliver_voice};
use lurkbot_channels::picture::{MAX_PICTURE_BYTES, picture_mime};
use lurkbot_channels::{Channel, ChannelError, Picture, VoiceNote};
use lurkbot_core::Home;
use lurkbot_core::metrics::CHANNEL_MESSAGES;
use lurkbot_state::{NewOutgoing, Outgoing, OutgoingState, Store};

use crate::channels::set::ChannelSet;

/// How often pending messages are tried again.
const RETRY_EVERY: Duration = Duration::from_secs(60);

/// How long ended turns (whose replies answer a retried `Idempotency-Key`), handled inbound
/// records and sent messages are kept.
pub(crate) const KEPT_FOR_MS: u64 = 7 * 24 * 3600 * 1000;

/// Passes of the send loop between two prunings (an hour).
const PRUNE_EVERY_PASSES: u64 = 60;

/// Forgets what is older than [`KEPT_FOR_MS`] and done with (failed messages and unended turns
/// stay).
fn prune(store: &Store) {
    let before = lurkbot_core::now_ms().saturating_sub(KEPT_FOR_MS);
    let pruned = (
        store.prune_turns(before),
        store.prune_inbound(before),
        store.prune_outbox(before),
    );
    match pruned {
        (Ok(turns), Ok(inbound), Ok(sent)) if turns + inbound + sent > 0 => {
            tracing::info!(turns, inbound, sent, "old state records pruned");
        }
        (Ok(_), Ok(_), Ok(_)) => {}
        _ => tracing::warn!("old state records not pruned"),
    }
}

impl ChannelSet {
    /// Records `text` for `chat` on channel `name` and sends it; where it went.
    ///
    /// # Errors
    /// It could not be recorded, the channel does not run, or the platform refused it (after
    /// its retries; a transient failure stays in the outbox and is sent later).
    pub(crate) async fn deliver_recorded(
        &self,
        (home, store): (&Home, &Store),
        message: NewOutgoing,
    ) -> Result<String, String> {
        let (name, chat) = (message.channel.clone(), message.chat.clone());
        if !self.has(&name) {
            return Err(format!(
                "the {name} channel is not running (see [channels.{name}])"
            ));
        }
        let recorded = store
            .enqueue(None, &message)
            .map_err(|e| format!("the message was not recorded, so not sent: {e}"))?;
        self.send_recorded(home, store, &recorded).await?;
        Ok(format!("{name} {chat}"))
    }

    /// Sends the rest of a recorded message and records how it went.
    ///
    /// # Errors
    /// The channel does not run, or the platform refused (the entry says so).
    pub(crate) async fn send_recorded(
        &self,
        home: &Home,
        store: &Store,
        message: &Outgoing,
    ) -> Result<(), String> {
        let Some(live) = self.live(&message.channel) else {
            return Err(format!(
                "the {} channel is not running: the message stays in the outbox",
                message.channel
            ));
        };
        if !self.in_flight.take(&message.id) {
            return Ok(());
        }
        // Every gateway on the state sends what the outbox holds: one at a time per message
        // (the lease `outbox:<id>`, free again when its holder dies), and read again under the
        // claim — a copy read before another sender finished it was sent a second time.
        let claim = format!("outbox:{}", message.id);
        let unclaim = |this: &Self| {
            this.in_flight.release(&message.id);
            if let Err(e) = store.give_back_lease(&claim) {
                tracing::warn!(outbox = message.id.as_str(), error = %e, "outbox claim not given back");
            }
        };
        match store.take_lease(&claim) {
            Ok(true) => {}
            Ok(false) => {
                self.in_flight.release(&message.id);
                return Ok(());
            }
            Err(e) => {
                self.in_flight.release(&message.id);
                return Err(format!("the outbox was not read: {e}"));
            }
        }
        let fresh = match store.outgoing(&message.id) {
            Ok(Some(fresh)) if fresh.state == OutgoingState::Pending => fresh,
            Ok(_) => {
                unclaim(self);
                return Ok(());
            }
            Err(e) => {
                unclaim(self);
                return Err(format!("the outbox was not read: {e}"));
            }
        };
        let message = &fresh;
        let first = message.pieces_sent as usize;
        let mut record = |pieces: usize, id: Option<&str>| {
            let pieces = u32::try_from(pieces).unwrap_or(u32::MAX);
            if let Err(e) = store.piece_sent(&message.id, pieces, id) {
                tracing::error!(outbox = message.id.as_str(), error = %e, "sent piece not recorded");
            }
        };
        let mut span = lurkbot_core::trace::Span::start(
            format!("deliver {}", live.channel().name()),
            lurkbot_core::trace::Kind::Client,
        );
        span.set("lurkbot.channel", live.channel().name());
        span.set("lurkbot.message.kind", message.kind.as_str());
        let sent = if message.kind == "voice" {
            send_voice_note(home, live.channel(), message).await
        } else if message.kind == "picture" {
            send_picture(home, live.channel(), message).await
        } else {
            deliver_from(
                live.channel(),
                &message.chat,
                &message.body,
                message.reply_to.as_deref(),
                RetryPolicy::default(),
                (&message.id, first),
                &mut record,
            )
            .await
        };
        let outcome = match sent {
            Ok(pieces) => {
                live.count_sent(pieces.saturating_sub(first));
                CHANNEL_MESSAGES.inc(&[live.channel().name(), "out"]);
                store.mark_sent(&message.id).map(|()| Ok(()))
            }
            Err(e) => {
                let permanent = matches!(e, ChannelError::Permanent(_));
                let text = format!(
                    "{} message to {} not sent: {e}",
                    message.channel, message.chat
                );
                tracing::warn!(outbox = message.id.as_str(), permanent, error = %e, "message not sent");
                span.fail(e.to_string());
                live.note_error(&text);
                CHANNEL_MESSAGES.inc(&[live.channel().name(), "failed"]);
                store
                    .mark_failed(&message.id, &e.to_string(), permanent)
                    .map(|()| Err(text))
            }
        };
        // Released once the outcome is recorded: a claim taken after it reads the message done.
        unclaim(self);
        outcome.unwrap_or_else(|e| Err(format!("the outbox could not record the send: {e}")))
    }

    /// Sends every pending message whose channel runs (at start, then every minute).
    pub(crate) async fn send_pending(&self, home: &Home, store: &Store) {
        let pending = match store.outbox(&[OutgoingState::Pending], 1000) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "the outbox was not read");
                return;
            }
        };
        for message in pending {
            if self.has(&message.channel) {
                let _ = self.send_recorded(home, store, &message).await;
            }
        }
    }
}

/// Sends the picture an outbox entry names: a home-relative path resolved as every reader
/// resolves it (links followed, confined to the home), refused when the protection model keeps
/// it from a chat others may read (secrets, the owner's private memory), when it is over
/// [`MAX_PICTURE_BYTES`] or not a picture; one piece.
async fn send_picture(
    home: &Home,
    channel: &dyn Channel,
    message: &Outgoing,
) -> Result<usize, ChannelError> {
    let refused = |why: String| ChannelError::Permanent(format!("{}: {why}", message.body));
    let path = home
        .resolve(&message.body)
        .map_err(|e| refused(e.to_string()))?;
    let protection = home.protection_seen_by(path.absolute(), false);
    if !protection.readable() {
        return Err(refused(
            protection.reason().unwrap_or("it is protected").to_string(),
        ));
    }
    let size = std::fs::metadata(path.absolute())
        .map_err(|e| refused(format!("unreadable: {e}")))?
        .len();
    if size > MAX_PICTURE_BYTES {
        return Err(refused(format!(
            "{size} bytes, over the {MAX_PICTURE_BYTES}-byte limit"
        )));
    }
    let bytes = std::fs::read(path.absolute()).map_err(|e| refused(format!("unreadable: {e}")))?;
    let mime = picture_mime(&bytes)
        .ok_or_else(|| refused("not a picture (PNG, JPEG, GIF or WebP)".into()))?;
    let name = path
        .absolute()
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("picture");
    let picture = Picture {
        bytes: &bytes,
        mime,
        name,
    };
    deliver_picture(
        channel,
        &message.chat,
        picture,
        message.reply_to.as_deref(),
        RetryPolicy::default(),
    )
    .await
    .map(|()| 1)
}

/// Sends the voice note an outbox entry names (a file under `workspace/audio/` the `tts` tool
/// made); one piece.
async fn send_voice_note(
    home: &Home,
    channel: &dyn Channel,
    message: &Outgoing,
) -> Result<usize, ChannelError> {
    let path = lurkbot_agent::speech::voice_note_file(home, &message.body).ok_or_else(|| {
        ChannelError::Permanent(format!("the voice note {} is gone", message.body))
    })?;
    let ogg = std::fs::read(&path)
        .map_err(|e| ChannelError::Permanent(format!("the voice note is unreadable: {e}")))?;
    let seconds = lurkbot_media::speech::ogg_opus_seconds(&ogg).unwrap_or(0.0);
    let note = VoiceNote { ogg: &ogg, seconds };
    deliver_voice(
        channel,
        &message.chat,
        note,
        message.reply_to.as_deref(),
        RetryPolicy::default(),
    )
    .await
    .map(|()| 1)
}

/// The outbox as `status` and `channels.status` show it: how many messages are pending and
/// failed, and the failed ones (the newest 20) with why.
pub(crate) fn summary(host: &crate::turns::host::SessionHost) -> serde_json::Value {
    let Some(store) = host.store() else {
        return serde_json::Value::Null;
    };
    let (pending, failed) = store.outbox_counts().unwrap_or_default();
    let undelivered: Vec<serde_json::Value> = store
        .outbox(&[OutgoingState::Failed], 1000)
        .unwrap_or_default()
        .iter()
        .rev()
        .take(20)
        .map(|m| {
            serde_json::json!({"id": m.id, "channel": m.channel, "chat": m.chat,
                "kind": m.kind, "text": m.body, "error": m.error, "updatedMs": m.updated_ms})
        })
        .collect();
    serde_json::json!({"pending": pending, "failed": failed, "undelivered": undelivered})
}

/// Sends pending messages now and every [`RETRY_EVERY`] until the gateway stops.
pub(crate) fn start(
    channels: Arc<ChannelSet>,
    home: Home,
    store: Store,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for pass in 0u64.. {
            if pass % PRUNE_EVERY_PASSES == 0 {
                prune(&store);
            }
            channels.send_pending(&home, &store).await;
            tokio::time::sleep(RETRY_EVERY).await;
        }
    })
}
