//! IRC as a channel (`[channels.irc]`): the IRC command's client, with the home's IRC settings
//! (`skills/irc-cli/secrets/.env`), kept connected by the gateway as the owner's chat line —
//! direct messages to the bot's nick, and channel messages that name it. Replies go back to the
//! sender's nick (or the channel), split into lines that fit IRC's limit. Nicks can be taken
//! by anyone on a network without registration: `allow_from` nicks are only as trustworthy as
//! the network's nick protection (pairing, the default, asks for a code either way).

use std::sync::Arc;
use std::time::Duration;

use lurkbot_term::{InboundMessage, IrcSessions};
use tokio::sync::mpsc;

use crate::{BoxFuture, Channel, ChannelError, Inbound};

/// The connection's session name among the IRC connections.
pub const LINE_SESSION: &str = "channel:irc";
/// The longest reply handed to the client at once (it splits it into IRC lines).
pub const MAX_CHARS: usize = 2000;
/// The line's liveness (§6.1.2): a server silent this long is pinged, and a link silent as
/// long again is dropped and made anew. Servers ping their clients every minute or two, so a
/// live link is rarely pinged by the bot.
const PING_AFTER: Duration = Duration::from_secs(60);

/// The gateway's IRC chat line.
pub struct IrcLine {
    sessions: Arc<IrcSessions>,
    inbox: tokio::sync::Mutex<mpsc::UnboundedReceiver<InboundMessage>>,
    nick: tokio::sync::Mutex<Option<String>>,
    ping_after: Duration,
}

impl IrcLine {
    /// A line on `sessions`, whose messages for [`LINE_SESSION`] the gateway sends to `inbox`.
    pub fn new(sessions: Arc<IrcSessions>, inbox: mpsc::UnboundedReceiver<InboundMessage>) -> Self {
        Self {
            sessions,
            inbox: tokio::sync::Mutex::new(inbox),
            nick: tokio::sync::Mutex::new(None),
            ping_after: PING_AFTER,
        }
    }

    /// Pings after `ping_after` of silence (tests shorten it).
    #[must_use]
    pub fn with_ping_after(mut self, ping_after: Duration) -> Self {
        self.ping_after = ping_after;
        self
    }
}

/// One IRC message as an [`Inbound`].
fn inbound(message: &InboundMessage, nick: &str) -> Inbound {
    let group = message.channel.starts_with(['#', '&', '+', '!']);
    let lower = message.text.to_lowercase();
    Inbound {
        channel: "irc",
        chat: if group {
            message.channel.clone()
        } else {
            message.nick.clone()
        },
        sender: message.nick.clone(),
        sender_name: message.nick.clone(),
        handle: None,
        forwarded_from: None,
        authenticated: true,
        text: message.text.clone(),
        group,
        mentioned: !nick.is_empty() && lower.contains(&nick.to_lowercase()),
        message_id: String::new(),
        thread: None,
        platform_id: None,
        media: Vec::new(),
    }
}

impl Channel for IrcLine {
    fn name(&self) -> &'static str {
        "irc"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        markdown.to_string()
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let nick = {
                let mut nick = self.nick.lock().await;
                if nick.is_none() || !self.sessions.has(LINE_SESSION) {
                    *nick = Some(
                        self.sessions
                            .open_line(LINE_SESSION, self.ping_after)
                            .await
                            .map_err(ChannelError::Transient)?,
                    );
                    // Connected: report it before waiting for messages.
                    return Ok(Vec::new());
                }
                nick.clone().unwrap_or_default()
            };
            let mut inbox = self.inbox.lock().await;
            let Some(first) = inbox.recv().await else {
                return Err(ChannelError::Permanent(
                    "the IRC line's messages stopped".into(),
                ));
            };
            let mut batch = vec![inbound(&first, &nick)];
            while let Ok(more) = inbox.try_recv() {
                batch.push(inbound(&more, &nick));
            }
            Ok(batch)
        })
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        _reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.sessions
                .say_to(LINE_SESSION, chat, text)
                .await
                .map_err(ChannelError::Transient)
        })
    }

    /// Stale while the link, dropped by its liveness check (or closed), is made anew.
    fn stale(&self) -> Option<String> {
        self.sessions.trouble(LINE_SESSION)
    }

    fn typing<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

#[cfg(test)]
#[path = "irc/liveness_tests.rs"]
mod liveness_tests;
