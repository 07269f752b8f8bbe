//! One inbound message, the same for every channel: access (pairing codes to strangers,
//! nothing to the model), routing (the binding's agent, the session key, a paired user's own
//! state), the turn (its answer goes through the outbox), the voice notes.

use lurkbot_channels::Inbound;
use lurkbot_channels::access::{Decision, code_message, decide, for_agent};
use lurkbot_channels::pairing::PairingStore;
use lurkbot_channels::routing::{agent_for, session_for};

use crate::channels::context::ChannelContext;
use crate::channels::live::Live;
use crate::channels::set::send;
use crate::turns::host::TurnOptions;

/// One inbound message: access, routing, the turn (whose answer the host sends through the
/// outbox), the voice notes.
pub(crate) async fn handle(state: &ChannelContext, live: &Live, message: Inbound) {
    let config = state.config();
    let name = live.channel.name();
    let Some(settings) = config.channels.get(name) else {
        crate::channels::inbound::handled(state, &message, "ignored");
        return;
    };
    state
        .host
        .plugins()
        .message_received(name, &message.sender, &message.text);
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
            crate::channels::inbound::handled(state, &message, "ignored");
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
            crate::channels::inbound::handled(state, &message, "pairing code");
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
    let (routed, state) = match state.paired_user(&pairings, name, message.sender.as_str()) {
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
    let voice_in = crate::channels::voice::hear(
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
            crate::channels::media::fetch_all(state, &*live.channel, &message, max).await;
        text.push_str(&notes);
        options.images = images;
    }
    options.origin = crate::turns::run::Origin::Channel {
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
    let spoken = crate::channels::voice::speak(
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
