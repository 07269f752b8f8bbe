//! The gateway's [`Runtime`]: sub-agents, `sessions_send`, cron jobs and heartbeats run their
//! turns in the session host (so they show on the hub and abort with their session), and
//! `message` delivers to `webchat` (a transcript entry of the main session and a `chat`
//! event) or `irc` (the terminal's `irc send`, through the session's connection, audited like
//! any command).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use lurkbot_agent::gate::{self, Act, Hold, Standing};
use lurkbot_agent::{
    BoxFuture, Outbound, Runtime, Subagents, TurnHandle, TurnOutcome, TurnRequest,
};
use lurkbot_core::SessionKey;
use lurkbot_term::ExecRequest;
use tokio::task::JoinHandle;

use crate::protocol::{ChatEvent, ChatState, Event, MethodError};
use crate::turns::host::{RunEnd, SessionHost, Slot, TurnOptions};

/// Marks one piece of a session's background work as ended when dropped (also when the work
/// is aborted), waking whoever waits for the session to be idle.
struct Ended(Arc<Slot>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.settled.notify_waiters();
    }
}

/// Running turns waited out before a start is given up.
const MAX_WAITS: usize = 20;

/// The session host as a [`Runtime`] (holding it weakly: the host owns the agents that hold
/// this).
pub struct HostRuntime {
    host: Weak<SessionHost>,
    /// The host's registry (shared).
    subagents: Subagents,
}

impl HostRuntime {
    /// A runtime over `host`, sharing its sub-agent registry.
    pub fn new(host: Weak<SessionHost>, subagents: Subagents) -> Self {
        Self { host, subagents }
    }

    fn host(&self) -> Result<Arc<SessionHost>, String> {
        self.host
            .upgrade()
            .ok_or_else(|| "the gateway is stopping".to_string())
    }
}

impl SessionHost {
    /// What this host's agents call back into: sub-agents, sessions, the gateway.
    pub(crate) fn agent_runtime(&self) -> Arc<HostRuntime> {
        Arc::new(HostRuntime::new(self.me.clone(), self.subagents.clone()))
    }
}

impl SessionHost {
    /// Starts a turn once `key` is free: a running turn is waited out (at most 20 of them in
    /// a row, each at most 10 minutes).
    ///
    /// # Errors
    /// `UNAVAILABLE` when the session stayed busy, or the turn could not start.
    pub(crate) async fn start_when_free(
        self: &Arc<Self>,
        key: SessionKey,
        message: String,
        options: TurnOptions,
        one_off: bool,
    ) -> Result<(String, JoinHandle<Result<TurnOutcome, MethodError>>), MethodError> {
        let run_id = format!("run_{}", lurkbot_core::random_hex(8));
        self.start_when_free_as(key, message, options, one_off, run_id)
            .await
    }

    /// [`SessionHost::start_when_free`] under a run id of the caller's (an admitted turn's).
    ///
    /// # Errors
    /// As [`SessionHost::start_when_free`].
    pub(crate) async fn start_when_free_as(
        self: &Arc<Self>,
        key: SessionKey,
        message: String,
        options: TurnOptions,
        one_off: bool,
        run_id: String,
    ) -> Result<(String, JoinHandle<Result<TurnOutcome, MethodError>>), MethodError> {
        let mut waits = 0;
        loop {
            let started = self.spawn_run(
                key.clone(),
                message.clone(),
                options.clone(),
                one_off,
                Box::new(|_| {}),
                run_id.clone(),
            );
            match started {
                Ok(started) => return Ok(started),
                Err(e) if waits >= MAX_WAITS || self.drain.is_draining() => return Err(e),
                Err(_) => {
                    waits += 1;
                    match self.running_run(&key) {
                        Some(run) => {
                            let _ = self.wait(&run, Duration::from_secs(600)).await;
                        }
                        // Its turn ended between the two looks: try again at once.
                        None => tokio::task::yield_now().await,
                    }
                }
            }
        }
    }

    /// Waits up to `timeout` until `key` runs no turn and no background work its turns started
    /// (sub-agents and their reports); whether it is idle.
    pub(crate) async fn wait_idle(&self, key: &SessionKey, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let slot = self.slot(key);
            let settled = slot.settled.notified();
            if let Some(run) = self.running_run(key) {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    return false;
                }
                let _ = self.wait(&run, left).await;
                continue;
            }
            if slot.active.load(Ordering::SeqCst) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                return false;
            }
        }
    }

    /// Records where the owner talked last (the `last` delivery target).
    pub(crate) fn note_route(&self, channel: &str, to: Option<String>) {
        if let Ok(mut last) = self.last_route.lock() {
            *last = (channel.to_string(), to);
        }
    }

    /// Delivers `message` (see the module documentation) once the gate allows it; the answer
    /// says where it went.
    ///
    /// # Errors
    /// An unknown channel, the gate refusing (or the human not approving), or the channel
    /// refusing.
    pub(crate) async fn deliver(&self, message: Outbound) -> Result<String, String> {
        let last = self.last_route.lock().map(|l| l.clone()).ok();
        let (channel, to) = match message.channel.as_str() {
            "last" => last.clone().unwrap_or_else(|| ("webchat".into(), None)),
            _ => (message.channel.clone(), message.to.clone()),
        };
        let to = message.to.clone().or(to);
        let config = self.current().1;
        let from_third_party = gate::is_third_party(&self.home, &config, &message.from);
        match channel.as_str() {
            "webchat" if message.asker.is_owner() && message.from == SessionKey::main() => {
                // A heartbeat's or main-session job's reply is already in the main session
                // (and went out as its turn's `chat` event).
                Ok("webchat".into())
            }
            "webchat" => {
                let act = Act::Message {
                    channel: "webchat",
                    to: "agent:main:main",
                    standing: Standing::OwnersDefault,
                    pairing: false,
                    from_third_party,
                };
                self.clear(&message, &act).await?;
                // Never written into a turn in progress (it would split a tool call from its
                // result): while the main session runs, it waits for the turn's end.
                let slot = self.slot(&SessionKey::main());
                if let Ok(_free) = slot.agent.try_lock() {
                    self.post_to_webchat(&message.text)?;
                    return Ok("webchat".into());
                }
                let Some(host) = self.me.upgrade() else {
                    return Err("the gateway is stopping".into());
                };
                let text = message.text.clone();
                let task = tokio::spawn(async move {
                    let _free = slot.agent.lock().await;
                    if let Err(e) = host.post_to_webchat(&text) {
                        tracing::warn!(error = %e, "webchat message not written");
                    }
                });
                if let Ok(mut tracked) = self.slot(&message.from).tracked.lock() {
                    tracked.push(task.abort_handle());
                }
                Ok("webchat (after the main session's running turn)".into())
            }
            // A running channel (the IRC line too) delivers through its platform.
            name if self.channels.has(name) => {
                let chat = to.clone().or_else(|| {
                    last.as_ref()
                        .filter(|(c, _)| c == name)
                        .and_then(|(_, chat)| chat.clone())
                });
                let Some(chat) = chat else {
                    return Err(format!(
                        "no {name} chat to send to: name one with `to`, or wait until your human writes from {name}"
                    ));
                };
                let standing = crate::turns::standing::standing(
                    &self.home,
                    &config,
                    name,
                    &chat,
                    &message.from,
                    last.as_ref(),
                );
                let act = Act::Message {
                    channel: name,
                    to: &chat,
                    standing,
                    pairing: true,
                    from_third_party,
                };
                self.clear(&message, &act).await?;
                match self.store() {
                    Some(store) => {
                        self.channels
                            .deliver_recorded(
                                (&self.home, store),
                                lurkbot_state::NewOutgoing {
                                    channel: name.to_string(),
                                    chat: chat.clone(),
                                    reply_to: None,
                                    kind: "text".into(),
                                    body: message.text.clone(),
                                },
                            )
                            .await
                    }
                    None => {
                        self.channels
                            .deliver(name, &chat, &message.text, None)
                            .await
                    }
                }
            }
            "irc" => {
                let mut command = String::from("irc send --text-stdin");
                if let Some(to) = &to {
                    if to.chars().any(char::is_whitespace) || to.starts_with('-') {
                        return Err(format!("'{to}' is not an IRC channel or nick"));
                    }
                    // IRC has no pairing: a target other than IRC_CHANNEL is a human's call.
                    let default = lurkbot_term::IrcConfig::load(&self.home)
                        .ok()
                        .map(|c| c.channel);
                    let standing = if default
                        .as_deref()
                        .is_some_and(|d| d.eq_ignore_ascii_case(to))
                    {
                        Standing::OwnersDefault
                    } else {
                        Standing::Stranger
                    };
                    let act = Act::Message {
                        channel: "irc",
                        to,
                        standing,
                        pairing: false,
                        from_third_party,
                    };
                    self.clear(&message, &act).await?;
                    // The gate allowed this target: `irc send`'s own confirm gate is passed.
                    command.push_str(&format!(" --to {to} --confirm"));
                }
                let mut request = ExecRequest::new(&command);
                request.session = self.irc_session_for(&message.from);
                request.stdin = Some(message.text.clone());
                let envelope = self.exec().run(request).await;
                if envelope.exit_code == 0 {
                    Ok(format!(
                        "irc{}",
                        to.map(|t| format!(" {t}")).unwrap_or_default()
                    ))
                } else {
                    Err(format!(
                        "{}: {}",
                        envelope.error_code.unwrap_or_default(),
                        envelope
                            .error_message
                            .unwrap_or_else(|| "irc send failed".into())
                    ))
                }
            }
            other => Err(format!(
                "unknown channel '{other}' (or it is not running); use one of: {}",
                lurkbot_agent::CHANNELS.join(", ")
            )),
        }
    }

    /// Asks the gate about `act` for `message` and carries out its verdict (an approval is
    /// asked of the connected clients).
    async fn clear(&self, message: &Outbound, act: &Act<'_>) -> Result<(), String> {
        let verdict = gate::decide(message.asker, act);
        let Act::Message { channel, to, .. } = *act else {
            return Err("only a message is delivered here".into());
        };
        let preview: String = message.text.chars().take(200).collect();
        let (_, _, approvals) = self.current();
        gate::clear(
            verdict,
            Hold {
                approver: &*self.approver,
                approvals: &approvals,
                session: message.from.as_str(),
                tool: "message",
                summary: format!(
                    "{channel} → {to} ({} asked): {preview}",
                    message.asker.as_str()
                ),
                key: format!("message:{channel}:{to}"),
            },
        )
        .await
    }

    /// Appends `text` to the main session and shows it to the web UI's clients (a `chat`
    /// event).
    pub(crate) fn post_to_webchat(&self, text: &str) -> Result<(), String> {
        lurkbot_agent::append_to_main(&self.home, text)?;
        self.hub.emit(Event::Chat(ChatEvent {
            run_id: format!("msg_{}", lurkbot_core::random_hex(8)),
            session_key: SessionKey::main().as_str().to_string(),
            state: ChatState::Final {
                text: text.to_string(),
                model: "message".into(),
                usage: Default::default(),
            },
        }));
        Ok(())
    }

    /// The session whose IRC connection carries a delivery from `from`: its own when it has
    /// one, else the main session's.
    fn irc_session_for(&self, from: &SessionKey) -> SessionKey {
        if self.irc().has(from.as_str()) {
            from.clone()
        } else {
            SessionKey::main()
        }
    }
}

/// The handle of a turn a source started before (a cron run cut by a restart, which the
/// gateway resumes): its end, from the run or the journal.
fn attached(host: Arc<SessionHost>, run_id: String, session: String) -> TurnHandle {
    let id = run_id.clone();
    TurnHandle {
        run_id,
        done: Box::pin(async move {
            loop {
                match host.wait(&id, Duration::from_secs(600)).await {
                    Ok(Some(RunEnd::Done { text, model })) => {
                        return Ok(TurnOutcome {
                            text,
                            model,
                            usage: lurkbot_llm::Usage::default(),
                            steps: 0,
                            session_id: session,
                            voice_notes: Vec::new(),
                        });
                    }
                    Ok(Some(RunEnd::Failed(message))) => return Err(message),
                    Ok(Some(RunEnd::Aborted)) => return Err("aborted".to_string()),
                    Ok(None) => continue,
                    Err(e) => return Err(e.message),
                }
            }
        }),
    }
}

impl Runtime for HostRuntime {
    fn start(&self, request: TurnRequest) -> BoxFuture<'_, Result<TurnHandle, String>> {
        Box::pin(async move {
            let host = self.host()?;
            let options = TurnOptions {
                model: request.model.clone(),
                thinking: request.thinking.clone(),
                budget: request.budget.clone(),
                ..TurnOptions::default()
            };
            let mut options = options;
            let run_id = format!("run_{}", lurkbot_core::random_hex(8));
            if let Some(source) = &request.source {
                let known = host
                    .admit_source(
                        &run_id,
                        source,
                        &request.session,
                        &request.message,
                        &options,
                        request.one_off,
                    )
                    .map_err(|e| e.message)?;
                if let Some(turn) = known {
                    return Ok(attached(host, turn.id, turn.session));
                }
                options.admitted = true;
            }
            let (run_id, task) = host
                .start_when_free_as(
                    request.session.clone(),
                    request.message.clone(),
                    options,
                    request.one_off,
                    run_id,
                )
                .await
                .map_err(|e| e.message)?;
            Ok(TurnHandle {
                run_id,
                done: Box::pin(async move {
                    match task.await {
                        Ok(result) => result.map_err(|e| e.message),
                        Err(_) => Err("aborted".to_string()),
                    }
                }),
            })
        })
    }

    fn busy(&self, session: &SessionKey) -> bool {
        self.host
            .upgrade()
            .is_some_and(|h| h.running_run(session).is_some())
    }

    fn abort<'a>(&'a self, session: &'a SessionKey) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Ok(host) = self.host() {
                // A sub-agent's or a cron run's session has nothing to keep in the host.
                let key = session.as_str();
                if key.contains(":subagent:") || key.starts_with("cron:") {
                    host.release(session).await;
                } else {
                    host.abort(session).await;
                }
            }
        })
    }

    fn deliver(&self, message: Outbound) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move { self.host()?.deliver(message).await })
    }

    fn inject<'a>(
        &'a self,
        session: &'a SessionKey,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let host = self.host()?;
            let slot = host.slot(session);
            // The session's agent lock is held by a running turn: waited out, then kept while
            // the entry is written.
            let _free = slot.agent.lock().await;
            lurkbot_agent::append_user(&host.home, session, text)
        })
    }

    fn track(&self, requester: &SessionKey, task: BoxFuture<'static, ()>) {
        let Ok(host) = self.host() else {
            return;
        };
        let slot = host.slot(requester);
        slot.active.fetch_add(1, Ordering::SeqCst);
        let ended = Ended(slot.clone());
        let handle = tokio::spawn(async move {
            // Dropped when the work ends or is aborted.
            let _ended = ended;
            task.await;
        });
        if let Ok(mut tracked) = slot.tracked.lock() {
            tracked.retain(|t| !t.is_finished());
            tracked.push(handle.abort_handle());
        }
    }

    fn subagents(&self) -> &Subagents {
        &self.subagents
    }

    fn gateway(&self) -> Option<Arc<dyn lurkbot_agent::GatewayControl>> {
        let host = self.host.upgrade()?;
        host.control.lock().ok()?.clone()
    }
}
