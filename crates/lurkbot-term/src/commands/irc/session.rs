//! The IRC connections of a gateway: one per session key, created on first use (lazy), kept
//! while the session lives, closed with QUIT when the session is reset or deleted or the gateway
//! stops. The gateway owns one [`IrcSessions`] and lends it to its terminal; `lurkbot exec`
//! in-process has none, so `irc` answers `GatewayRequired` there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lurkbot_core::Home;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use super::client::{Link, Request};
use super::config::IrcConfig;
use super::store::{Inbound, Ring, Store};

/// A connection's state, as `irc status` and the `irc.status` event name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IrcState {
    /// No connection was asked for yet.
    NotInitialized,
    /// Connecting or registering (also while reconnecting).
    Connecting,
    /// Registered with the server.
    Connected,
    /// In the default channel.
    Joined,
    /// The last attempt failed (see `last_error`); a reconnect follows.
    Error,
    /// Closed on purpose.
    Disconnected,
}

impl IrcState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotInitialized => "not_initialized",
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Joined => "joined",
            Self::Error => "error",
            Self::Disconnected => "disconnected",
        }
    }
}

/// What the connections report to the gateway.
#[derive(Debug, Clone)]
pub enum IrcEvent {
    /// A connection changed state (never carries the server, nick or channel).
    Status {
        /// The session key.
        session: String,
        /// The new state.
        state: IrcState,
    },
    /// A message arrived on a connection whose settings ask for delivery to the agent
    /// (`IRC_AUTO_FORWARD_TO_AGENT=1`); cleaned.
    Inbound {
        /// The session key.
        session: String,
        /// The message.
        message: InboundMessage,
    },
}

/// A received message as the gateway sees it.
pub type InboundMessage = Inbound;

/// Where events go.
pub type EventSink = Arc<dyn Fn(IrcEvent) + Send + Sync>;

/// State shared between a connection's task and the commands.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: IrcState,
    pub(crate) joined: bool,
    pub(crate) nick: Option<String>,
    pub(crate) last_error: Option<(String, String)>,
    pub(crate) ring: Ring,
}

/// One session's connection.
pub(crate) struct IrcSession {
    pub(crate) config: IrcConfig,
    pub(crate) store: Store,
    pub(crate) shared: Arc<Mutex<Shared>>,
    changed: watch::Receiver<u64>,
    requests: mpsc::UnboundedSender<Request>,
    wake: Arc<Notify>,
}

impl IrcSession {
    /// A snapshot of the state, the nick in use and the last error.
    pub(crate) fn snapshot(&self) -> (IrcState, bool, Option<(String, String)>) {
        match self.shared.lock() {
            Ok(s) => (s.state, s.joined, s.last_error.clone()),
            Err(_) => (IrcState::Error, false, None),
        }
    }

    /// Waits up to `limit` for `done` to hold, nudging a reconnect when the link is down.
    pub(crate) async fn wait_for(
        &self,
        limit: Duration,
        done: impl Fn(IrcState, bool) -> bool,
    ) -> bool {
        let mut changed = self.changed.clone();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let (state, joined, _) = self.snapshot();
            if done(state, joined) {
                return true;
            }
            if state == IrcState::Error {
                self.wake.notify_one();
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    let (state, joined, _) = self.snapshot();
                    return done(state, joined);
                }
            }
        }
    }

    /// Sends `lines` to `target`.
    ///
    /// # Errors
    /// Why they could not be written.
    pub(crate) async fn say(&self, target: &str, lines: Vec<String>) -> Result<(), String> {
        let (done, answer) = oneshot::channel();
        self.requests
            .send(Request::Say {
                target: target.to_string(),
                lines,
                done,
            })
            .map_err(|_| "the connection has stopped".to_string())?;
        answer
            .await
            .map_err(|_| "the connection has stopped".to_string())?
    }

    async fn quit(&self) {
        let (done, finished) = oneshot::channel();
        if self.requests.send(Request::Quit(done)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(5), finished).await;
        }
    }
}

/// Every session's connection.
pub struct IrcSessions {
    home: Home,
    sessions: Mutex<HashMap<String, Arc<IrcSession>>>,
    /// Held while a connection is looked up or made, so two commands arriving together for one
    /// session never make two connections.
    opening: tokio::sync::Mutex<()>,
    events: Option<EventSink>,
}

impl std::fmt::Debug for IrcSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IrcSessions").finish_non_exhaustive()
    }
}

impl IrcSessions {
    /// No connections yet; events go to `events`.
    pub fn new(home: Home, events: Option<EventSink>) -> Self {
        Self {
            home,
            sessions: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
            events,
        }
    }

    /// Whether the home has IRC settings at all (the web UI shows its light only then).
    pub fn configured(home: &Home) -> bool {
        home.join(super::config::CREDENTIALS_FILE).is_file()
    }

    /// Whether the session has a connection.
    pub fn has(&self, session: &str) -> bool {
        self.get(session).is_some()
    }

    /// The session's connection, if one was made.
    pub(crate) fn get(&self, session: &str) -> Option<Arc<IrcSession>> {
        self.sessions.lock().ok()?.get(session).cloned()
    }

    /// The session's connection, made (and started) on first use. Settings that changed since
    /// it was made replace it.
    pub(crate) async fn open(&self, session: &str, config: &IrcConfig) -> Arc<IrcSession> {
        let _one_at_a_time = self.opening.lock().await;
        if let Some(existing) = self.get(session) {
            if existing.config == *config {
                return existing;
            }
            self.close(session).await;
        }
        let store = Store::new(&self.home, session);
        let shared = Arc::new(Mutex::new(Shared {
            state: IrcState::Connecting,
            joined: false,
            nick: None,
            last_error: None,
            ring: store.load_ring(),
        }));
        let (changed_tx, changed) = watch::channel(0);
        let (requests, incoming) = mpsc::unbounded_channel();
        let wake = Arc::new(Notify::new());
        let link = Link {
            session: session.to_string(),
            config: config.clone(),
            store: store.clone(),
            shared: shared.clone(),
            changed: changed_tx,
            wake: wake.clone(),
            events: self.events.clone(),
        };
        tokio::spawn(link.run(incoming));
        let created = Arc::new(IrcSession {
            config: config.clone(),
            store,
            shared,
            changed,
            requests,
            wake,
        });
        if let Ok(mut all) = self.sessions.lock() {
            all.insert(session.to_string(), created.clone());
        }
        created
    }

    /// Opens `session`'s connection as a chat line for the gateway's IRC channel: the home's
    /// IRC settings, with every inbound message handed on (as `IRC_AUTO_FORWARD_TO_AGENT=1`
    /// does) and the server pinged after `ping_after` of silence (a link that stays silent as
    /// long again is dropped and made anew); the nick in use once registered.
    ///
    /// # Errors
    /// The settings are missing or invalid, or the connection did not register within 30 s.
    pub async fn open_line(&self, session: &str, ping_after: Duration) -> Result<String, String> {
        let mut config = IrcConfig::load(&self.home).map_err(|e| e.message)?;
        config.auto_forward = true;
        config.ping_after = ping_after;
        let line = self.open(session, &config).await;
        if !line
            .wait_for(Duration::from_secs(30), |state, _| {
                state == IrcState::Joined || state == IrcState::Connected
            })
            .await
        {
            let (_, _, error) = line.snapshot();
            return Err(error.map_or_else(
                || "the IRC server did not register the bot within 30 s".to_string(),
                |(code, message)| format!("{code}: {message}"),
            ));
        }
        Ok(line
            .shared
            .lock()
            .ok()
            .and_then(|s| s.nick.clone())
            .unwrap_or(config.nick))
    }

    /// Why `session`'s connection is not up after a failure — an unanswered ping, a closed
    /// link — while it is being made anew; `None` while it is registered, was never opened, or
    /// is still making its first connection.
    pub fn trouble(&self, session: &str) -> Option<String> {
        let (state, _, error) = self.get(session)?.snapshot();
        match state {
            IrcState::Connected | IrcState::Joined => None,
            _ => error.map(|(code, message)| format!("{code}: {message}; connecting again")),
        }
    }

    /// Sends `text` to `target` (a nick or a channel) on `session`'s connection, split into
    /// lines that fit IRC's limit.
    ///
    /// # Errors
    /// No connection, or it could not write.
    pub async fn say_to(&self, session: &str, target: &str, text: &str) -> Result<(), String> {
        let line = self.get(session).ok_or("the IRC connection is not open")?;
        line.say(target, super::text::outbound_lines(target, text))
            .await
    }

    /// Closes the session's connection with QUIT (when it has one).
    pub async fn close(&self, session: &str) -> bool {
        let removed = self
            .sessions
            .lock()
            .ok()
            .and_then(|mut all| all.remove(session));
        match removed {
            Some(s) => {
                s.quit().await;
                true
            }
            None => false,
        }
    }

    /// Closes every connection (the gateway is stopping).
    pub async fn close_all(&self) {
        let all: Vec<Arc<IrcSession>> = self
            .sessions
            .lock()
            .map(|mut m| m.drain().map(|(_, s)| s).collect())
            .unwrap_or_default();
        for s in all {
            s.quit().await;
        }
    }
}
