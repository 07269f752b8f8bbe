//! The messaging channels the gateway runs (ARCHITECTURE.md §6.1): each configured
//! `[channels.<name>]` with its credentials in the home's `.env` is started with the gateway,
//! and its messages go through access ([`lurkbot_channels::access`]: pairing codes to
//! strangers, nothing to the model), routing (the binding's agent, the §5 session key) and a
//! turn whose reply is delivered back in the platform's chunks with its retry policy. The
//! `message` tool, cron `announce` and the heartbeat deliver through [`ChannelSet::deliver`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lurkbot_channels::access::{Decision, code_message, decide, for_agent};
use lurkbot_channels::delivery::{RetryPolicy, deliver};
use lurkbot_channels::pairing::PairingStore;
use lurkbot_channels::routing::{agent_for, session_for};
use lurkbot_channels::{Channel, ChannelError, ChannelStatus, Inbound};
use lurkbot_core::layout;
use serde_json::{Value, json};

pub(crate) use crate::channel_live::Live;
use crate::host::TurnOptions;
use crate::state::AppState;

/// Longest pause between failed receives.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The running channels, by name.
#[derive(Default)]
pub(crate) struct ChannelSet {
    running: Mutex<BTreeMap<&'static str, Arc<Live>>>,
    /// Where the IRC forwarder hands the IRC line's messages (`[channels.irc]`).
    irc_line: Mutex<Option<tokio::sync::mpsc::UnboundedSender<lurkbot_term::InboundMessage>>>,
    /// Outbox entries being sent now (`outbox.rs`).
    pub(crate) in_flight: crate::outbox::InFlight,
}

impl ChannelSet {
    fn get(&self, name: &str) -> Option<Arc<Live>> {
        self.running.lock().ok()?.get(name).cloned()
    }

    /// The running channel `name`.
    pub(crate) fn live(&self, name: &str) -> Option<Arc<Live>> {
        self.get(name)
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
                        Some((name.to_string(), live.status.lock().ok()?.clone()))
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

async fn send(live: &Live, chat: &str, text: &str, reply_to: Option<&str>) -> Result<(), String> {
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

/// Makes the channel `name` from its settings and the home's variables.
fn build(state: &AppState, name: &str) -> Result<Arc<dyn Channel>, String> {
    let config = state.config();
    let settings = config.channels.get(name).cloned().unwrap_or_default();
    let vars = lurkbot_agent::setup::variables(&state.home);
    // What a channel needs from `.env` is said in one place, which `lurkbot doctor` reads too.
    if let Some(lacking) =
        lurkbot_channels::credentials::missing_variables(name, |v| vars(v).is_some())
    {
        return Err(lacking);
    }
    match name {
        "telegram" => {
            let token = vars("TELEGRAM_BOT_TOKEN")
                .ok_or("TELEGRAM_BOT_TOKEN is not set (put it in the home's .env)")?;
            let dir = state.home.join(layout::CHANNELS).join("telegram");
            lurkbot_channels::telegram::Telegram::new(settings.base_url.as_deref(), &token, dir)
                .map(|t| Arc::new(t) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        "discord" => {
            let token = vars("DISCORD_BOT_TOKEN")
                .ok_or("DISCORD_BOT_TOKEN is not set (put it in the home's .env)")?;
            let dir = state.home.join(layout::CHANNELS).join("discord");
            lurkbot_channels::discord::Discord::new(settings.base_url.as_deref(), &token)
                .map(|d| Arc::new(d.resuming_from(dir)) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        "slack" => {
            let bot = vars("SLACK_BOT_TOKEN")
                .ok_or("SLACK_BOT_TOKEN is not set (put it in the home's .env)")?;
            let app = vars("SLACK_APP_TOKEN").ok_or("SLACK_APP_TOKEN is not set (an app-level xapp- token with connections:write, in the home's .env)")?;
            lurkbot_channels::slack::Slack::new(settings.base_url.as_deref(), &bot, &app)
                .map(|s| Arc::new(s) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        "email" => {
            let need = |name: &str| {
                vars(name).ok_or_else(|| format!("{name} is not set (put it in the home's .env)"))
            };
            let settings = lurkbot_channels::email::EmailSettings {
                imap_url: need("EMAIL_IMAP_URL")?,
                smtp_url: need("EMAIL_SMTP_URL")?,
                user: need("EMAIL_USER")?,
                password: need("EMAIL_PASSWORD")?,
                from: need("EMAIL_FROM")?,
                trusted_authserv_id: settings.trusted_authserv_id.clone(),
            };
            let dir = state.home.join(layout::CHANNELS).join("email");
            Ok(Arc::new(lurkbot_channels::email::Email::new(settings, dir)) as Arc<dyn Channel>)
        }
        "irc" => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            if let Ok(mut line) = state.host.channels.irc_line.lock() {
                *line = Some(tx);
            }
            Ok(
                Arc::new(lurkbot_channels::irc::IrcLine::new(state.host.irc(), rx))
                    as Arc<dyn Channel>,
            )
        }
        "matrix" => {
            use lurkbot_channels::matrix::{Credentials, Matrix};
            let homeserver = settings
                .base_url
                .clone()
                .or_else(|| vars("MATRIX_HOMESERVER"))
                .ok_or("MATRIX_HOMESERVER is not set (put it in the home's .env, or base_url)")?;
            let credentials = match (vars("MATRIX_ACCESS_TOKEN"), vars("MATRIX_USER"), vars("MATRIX_PASSWORD")) {
                (Some(token), _, _) => Credentials::Token(token),
                (None, Some(user), Some(password)) => Credentials::Password { user, password },
                _ => return Err("set MATRIX_ACCESS_TOKEN, or MATRIX_USER and MATRIX_PASSWORD, in the home's .env".into()),
            };
            // Invitations: from whoever may talk to the bot, and direct ones under pairing or
            // open (a stranger must be able to receive their code).
            let invites_state = state.clone();
            let invites = Box::new(move |inviter: &str, direct: bool| {
                let config = invites_state.config();
                let Some(c) = config.channels.get("matrix") else {
                    return false;
                };
                c.allow_from.iter().any(|a| a == inviter)
                    || PairingStore::open(&invites_state.home)
                        .is_approved("matrix", inviter)
                        .unwrap_or(false)
                    || (direct && matches!(c.dm_policy.as_str(), "pairing" | "open"))
            });
            let dir = state.home.join(layout::CHANNELS).join("matrix");
            Matrix::new(&homeserver, credentials, dir, invites)
                .map(|m| Arc::new(m) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        other => Err(format!("LurkBot has no '{other}' channel")),
    }
}

/// Starts every enabled channel; the receive loops' handles (aborted when the gateway stops).
pub(crate) fn start(state: &AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let config = state.config();
    let mut tasks = Vec::new();
    for (name, settings) in &config.channels {
        if !settings.enabled {
            continue;
        }
        let Some(name) = lurkbot_core::CHANNEL_NAMES
            .iter()
            .copied()
            .find(|n| n == name)
        else {
            continue;
        };
        let live = match build(state, name) {
            Ok(channel) => Arc::new(Live::new(channel)),
            Err(e) => {
                tracing::warn!(channel = name, error = e.as_str(), "channel not started");
                continue;
            }
        };
        if let Ok(mut running) = state.host.channels.running.lock() {
            running.insert(name, live.clone());
        }
        tracing::info!(channel = name, "channel started");
        tasks.push(tokio::spawn(crate::channel_lease::hold_then_receive(
            state.clone(),
            live,
        )));
    }
    tasks
}

/// Receives until the gateway stops; failures back off (a platform's `retry_after` is
/// honoured) and are shown in the channel's status.
pub(crate) async fn receive_loop(state: AppState, live: Arc<Live>) {
    let mut backoff = Duration::from_secs(1);
    loop {
        match live.channel.receive().await {
            Ok(batch) => {
                backoff = Duration::from_secs(1);
                live.update(|s| {
                    s.state = "connected".into();
                    s.received += batch.len() as u64;
                });
                lurkbot_core::metrics::CHANNEL_MESSAGES
                    .add(&[live.channel.name(), "in"], batch.len() as f64);
                // Recorded before the platform is told they arrived; one served again after
                // a crash is recorded already, and not answered twice.
                let Some(batch) = crate::channel_inbound::record(&state, &live, batch) else {
                    tokio::time::sleep(backoff).await;
                    continue;
                };
                live.channel.acknowledge();
                if !batch.is_empty() {
                    // One task per batch: its messages are answered in order, and receiving
                    // goes on meanwhile.
                    let (state, live) = (state.clone(), live.clone());
                    tokio::spawn(async move {
                        for message in batch {
                            handle(&state, &live, message).await;
                        }
                    });
                }
            }
            Err(e) => {
                let wait = match &e {
                    ChannelError::RetryAfter(wait, _) => *wait,
                    _ => backoff,
                };
                backoff = (backoff * 2).min(MAX_BACKOFF);
                let permanent = matches!(e, ChannelError::Permanent(_));
                tracing::warn!(channel = live.channel.name(), error = %e, "channel receive failed");
                live.update(|s| {
                    s.state = if permanent { "failed" } else { "retrying" }.into();
                    s.last_error = Some(e.to_string());
                });
                tokio::time::sleep(if permanent { MAX_BACKOFF } else { wait }).await;
            }
        }
    }
}

/// One inbound message: access, routing, the turn (whose answer the host sends through the
/// outbox), the voice notes.
pub(crate) async fn handle(state: &AppState, live: &Live, message: Inbound) {
    let config = state.config();
    let name = live.channel.name();
    let Some(settings) = config.channels.get(name) else {
        crate::channel_inbound::handled(state, &message, "ignored");
        return;
    };
    let pairings = PairingStore::open(&state.home);
    let decision = match decide(settings, &pairings, &message, lurkbot_core::now_ms()) {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(channel = name, error = %e, "channel message not answered: pairing state");
            return;
        }
    };
    let owner = match decision {
        Decision::Ignore(reason) => {
            crate::channel_inbound::handled(state, &message, "ignored");
            tracing::info!(
                channel = name,
                sender = message.sender.as_str(),
                reason,
                "channel message not answered"
            );
            return;
        }
        Decision::SendCode(code) => {
            tracing::info!(
                channel = name,
                sender = message.sender.as_str(),
                "pairing code sent; approve with lurkbot pairing approve"
            );
            crate::channel_inbound::handled(state, &message, "pairing code");
            let text = code_message(&code);
            let reply_to = Some(message.message_id.as_str());
            match state.host.store() {
                Some(store) => {
                    let _ = state
                        .host
                        .channels
                        .deliver_recorded(
                            (&state.home, store),
                            lurkbot_state::NewOutgoing {
                                channel: name.to_string(),
                                chat: message.chat.clone(),
                                reply_to: reply_to.map(str::to_string),
                                kind: "code".into(),
                                body: text.clone(),
                            },
                        )
                        .await;
                }
                None => {
                    let _ = send(live, &message.chat, &text, reply_to).await;
                }
            }
            return;
        }
        Decision::Answer { owner } => owner,
    };
    // On a shared gateway, a sender a user paired is that user: their agent answers, in
    // their home (ARCHITECTURE.md §6.2).
    let (routed, state) = match routed_to(state, &pairings, name, message.sender.as_str()) {
        Ok(Some(user_state)) => (true, user_state),
        Ok(None) => (false, state.clone()),
        Err(e) => {
            tracing::warn!(channel = name, error = %e, "channel message not answered: its user");
            return;
        }
    };
    let state = &state;
    let owner = owner || routed;
    let agent = if routed {
        "main".to_string()
    } else {
        agent_for(&config.bindings, &message)
    };
    let key = match session_for(&agent, &message, config.session.dm_scope == "main", owner) {
        Ok(key) => key,
        Err(e) => {
            tracing::warn!(channel = name, error = %e, "channel message not answered: no session key");
            return;
        }
    };
    if owner && !message.group {
        state.host.note_route(name, Some(message.chat.clone()));
    }
    live.channel.typing(&message.chat).await;
    let mut message = message;
    let voice_in = crate::channel_voice::hear(
        state,
        &*live.channel,
        &mut message,
        settings.max_media_bytes,
    )
    .await;
    let mut text = for_agent(&message, owner, settings.max_inbound_chars);
    let mut options = TurnOptions::default();
    if settings.fetch_media && !message.media.is_empty() {
        let max = settings.max_media_bytes;
        let (notes, images) =
            crate::channel_media::fetch_all(state, &*live.channel, &message, max).await;
        text.push_str(&notes);
        options.images = images;
    }
    options.origin = crate::durable::Origin::Channel {
        channel: name.to_string(),
        chat: message.chat.clone(),
        reply_to: Some(message.message_id.clone()),
    };
    let run_id = format!("run_{}", lurkbot_core::random_hex(8));
    let admitted = match message.source_id() {
        Some(source) => state
            .host
            .admit_source(&run_id, &source, &key, &text, &options, false),
        // Without a platform id the turn is journalled when it starts, without a source.
        None => Ok(None),
    };
    match admitted {
        Ok(None) => options.admitted = message.source_id().is_some(),
        Ok(Some(turn)) => {
            tracing::info!(
                channel = name,
                run_id = turn.id.as_str(),
                "message answered by its turn already"
            );
            return;
        }
        Err(e) => {
            tracing::error!(
                channel = name,
                error = e.message.as_str(),
                "channel message not answered"
            );
            return;
        }
    }
    let started = state
        .host
        .start_when_free_as(key.clone(), text, options, false, run_id)
        .await;
    let (reply, made) = match started {
        Ok((_, task)) => match task.await {
            Ok(Ok(outcome)) => (outcome.text, outcome.voice_notes),
            Ok(Err(e)) => {
                // The details (a provider's error, a budget) are the owner's: logged; the
                // channel is sent an apology (through the outbox, by the host).
                tracing::warn!(
                    channel = name,
                    session = key.as_str(),
                    error = e.message.as_str(),
                    "channel turn failed"
                );
                return;
            }
            Err(_) => return,
        },
        Err(e) => {
            tracing::warn!(
                channel = name,
                session = key.as_str(),
                error = e.message.as_str(),
                "channel message not answered now: its turn waits in the journal"
            );
            return;
        }
    };
    let reply_to = Some(message.message_id.as_str());
    let spoken = crate::channel_voice::speak(
        state,
        &*live.channel,
        &message.chat,
        reply_to,
        &made,
        &reply,
        voice_in,
    )
    .await;
    live.update(|s| s.sent += spoken as u64);
}

/// `channels.status`: each configured channel with its state and the pending pairings.
pub(crate) fn status(state: &AppState) -> Value {
    let config = state.config();
    let running: BTreeMap<String, ChannelStatus> =
        state.host.channels.statuses().into_iter().collect();
    let pending = PairingStore::open(&state.home)
        .pending(lurkbot_core::now_ms())
        .unwrap_or_default();
    let channels: Vec<Value> = config
        .channels
        .iter()
        .map(|(name, settings)| {
            let status = running.get(name).cloned().unwrap_or(ChannelStatus {
                state: if settings.enabled {
                    "not started"
                } else {
                    "disabled"
                }
                .into(),
                ..ChannelStatus::default()
            });
            json!({"name": name, "enabled": settings.enabled, "dmPolicy": settings.dm_policy,
                "state": status.state, "lastError": status.last_error,
                "received": status.received, "sent": status.sent,
                "pendingPairings": pending.iter().filter(|p| &p.channel == name).count()})
        })
        .collect();
    json!({"channels": channels, "pendingPairings": pending,
        "outbox": crate::outbox::summary(state)})
}

/// The state of the user `sender` on `channel` belongs to (a user of a shared gateway paired
/// them), or `None` for the gateway's own.
fn routed_to(
    state: &AppState,
    pairings: &PairingStore,
    channel: &str,
    sender: &str,
) -> Result<Option<AppState>, String> {
    let Some(users) = &state.users else {
        return Ok(None);
    };
    let Some(user) = pairings
        .user_of(channel, sender)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    if !users.users().iter().any(|u| u.name == user && !u.admin) {
        return Err(format!("the user '{user}' who paired this sender is gone"));
    }
    users
        .user_state(state, &user)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// `channels.pairing.approve {channel, code}` and `channels.pairing.deny {channel, code}`.
/// A user of a shared gateway approves into the gateway's pairings, and the sender becomes
/// theirs.
pub(crate) fn pairing(
    state: &AppState,
    params: &Value,
    approve: bool,
) -> Result<Value, crate::protocol::MethodError> {
    use crate::protocol::{ErrorCode, MethodError};
    let text = |name: &str| {
        params
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| MethodError::invalid(format!("missing string parameter '{name}'")))
    };
    let (channel, code) = (text("channel")?, text("code")?);
    let gateway_home = match state.home.shared() {
        Some(root) => lurkbot_core::Home::open(root)
            .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?,
        None => state.home.clone(),
    };
    let store = PairingStore::open(&gateway_home);
    let now = lurkbot_core::now_ms();
    let done = if approve {
        store.approve_for(channel, code, now, state.user.as_deref())
    } else if state.user.is_some() {
        return Err(MethodError::new(
            ErrorCode::Forbidden,
            "only the gateway's admin denies pairings",
        ));
    } else {
        store.deny(channel, code, now)
    };
    match done {
        Ok(p) => Ok(
            json!({"channel": p.channel, "sender": p.sender, "name": p.name,
            "approved": approve}),
        ),
        Err(e @ lurkbot_channels::pairing::PairingError::NotFound { .. }) => {
            Err(MethodError::new(ErrorCode::NotFound, e.to_string()))
        }
        Err(e) => Err(MethodError::new(ErrorCode::Unavailable, e.to_string())),
    }
}
