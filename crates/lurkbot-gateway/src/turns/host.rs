//! The session host: long-lived per-session resources (the agent with its model clients,
//! auth-profile state and context cache; the running turn; IRC connections), created lazily
//! and released when the session is reset or deleted or the gateway stops.
//!
//! One turn runs per session at a time; another request for a busy session is refused with
//! `UNAVAILABLE`. Turns report as events: `agent` (`lifecycle` start/end/error, `tool`
//! start/end, `compaction`) and `chat` (`delta` text, then `final`, `error` or `aborted`). An
//! aborted turn is recorded in the transcript as cancelled.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use lurkbot_agent::Approvals;
use lurkbot_agent::{Agent, AgentEvent, Subagents, TurnOutcome};
use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_term::{InboundMessage, IrcEvent, IrcSessions, TerminalExec};
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinHandle};

use crate::events::hub::{ClientApprover, Hub};
use crate::protocol::{
    self, AgentStream, ChatState, ErrorCode, Event, Lifecycle, LifecyclePhase, MethodError,
};
use crate::turns::frames::{agent_event, chat, hub_event};
pub use crate::turns::run::{RunEnd, TurnOptions};

#[derive(Default)]
/// One session's place in the host: its agent, its running turn, its background work.
pub(crate) struct Slot {
    /// The session's agent, the config generation it was made from and its model choice.
    pub(crate) agent: tokio::sync::Mutex<Option<(u64, TurnOptions, Agent)>>,
    pub(crate) running: Mutex<Option<(String, AbortHandle)>>,
    /// Background work started by this session's turns (sub-agents and their announce
    /// turns, background sends, cron runs): aborted with the session.
    pub(crate) tracked: Mutex<Vec<AbortHandle>>,
    /// Pieces of that background work not ended yet (finished or aborted).
    pub(crate) active: AtomicU64,
    /// Signalled whenever a piece of that background work ends.
    pub(crate) settled: tokio::sync::Notify,
    /// The session's latest run.
    pub(crate) last_run: Mutex<Option<String>>,
    /// When the session was last used, on the host's use counter (the least recently used
    /// idle sessions give back their agents first: `slots.rs`).
    pub(crate) used: AtomicU64,
}

/// Runs older than this many finished runs are forgotten by `agent.wait`.
pub(crate) const KEPT_RUNS: usize = 256;

/// Per-session agents and running turns.
pub struct SessionHost {
    pub(crate) home: Home,
    /// The settings in force, their approval rules, and a generation that a reload bumps (an
    /// agent made from an older generation is made anew before its next turn).
    config: RwLock<(u64, Arc<Config>, Arc<Approvals>)>,
    generation: AtomicU64,
    pub(crate) hub: Hub,
    pub(crate) approver: Arc<ClientApprover>,
    exec: Arc<TerminalExec>,
    irc: Arc<IrcSessions>,
    /// Inbound IRC messages, for delivery to the agent (taken by the forwarder at start).
    pub(crate) inbound: Mutex<Option<mpsc::UnboundedReceiver<(String, InboundMessage)>>>,
    pub(crate) slots: Mutex<HashMap<String, Arc<Slot>>>,
    /// How many idle agents and slots it keeps.
    pub(crate) bounds: crate::turns::bounds::Bounds,
    /// The use counter of [`Slot::used`].
    pub(crate) uses: AtomicU64,
    pub(crate) runs: Mutex<Vec<(String, watch::Receiver<Option<RunEnd>>)>>,
    pub(crate) subagents: Subagents,
    /// Where the owner last talked (`webchat`, or `irc` and the channel or nick): the
    /// `last` delivery target.
    pub(crate) last_route: Mutex<(String, Option<String>)>,
    /// The MCP servers (read when the gateway starts), lent to every session's agent.
    pub(crate) mcp: Arc<lurkbot_agent::mcp::McpHub>,
    /// The messaging channels the gateway runs (started with it).
    pub(crate) channels: Arc<crate::channels::set::ChannelSet>,
    /// The plugins the gateway runs (none for a user's host, and until the gateway starts
    /// them).
    pub(crate) plugins: RwLock<Arc<crate::plugins::PluginHost>>,
    /// The gateway as the `gateway` tool sees it, while [`crate::serve`] serves (it holds the
    /// gateway's state, so it is let go when serving ends).
    pub(crate) control: Mutex<Option<Arc<dyn lurkbot_agent::GatewayControl>>>,
    /// Whether the gateway is stopping: no new turn starts (`drain.rs`).
    pub(crate) drain: Arc<crate::turns::drain::Drain>,
    /// The home's durable state: the turn journal, inbound records, the outbox (`durable.rs`);
    /// `None` only when it could not be opened (the gateway then refuses to serve).
    pub(crate) store: Option<lurkbot_state::Store>,
    pub(crate) me: Weak<SessionHost>,
}

impl SessionHost {
    /// A host for `home`.
    pub fn new(home: Home, config: Config, hub: Hub, approver: Arc<ClientApprover>) -> Arc<Self> {
        let (inbound_tx, inbound) = mpsc::unbounded_channel();
        let events_hub = hub.clone();
        let irc = Arc::new(IrcSessions::new(
            home.clone(),
            Some(Arc::new(move |event| match event {
                IrcEvent::Status { session, state } => {
                    events_hub.emit(Event::IrcStatus(protocol::IrcStatus {
                        session_key: session,
                        state: state.as_str().to_string(),
                    }));
                }
                IrcEvent::Inbound { session, message } => {
                    let _ = inbound_tx.send((session, message));
                }
            })),
        ));
        let exec = Arc::new(
            TerminalExec::new(home.clone(), lurkbot_term::default_registry()).with_irc(irc.clone()),
        );
        let approvals = Arc::new(Approvals::new(&home, config.approvals.clone()));
        let mcp = lurkbot_agent::mcp::McpHub::new(&home, &config.mcp);
        let owner = config
            .gateway
            .id
            .clone()
            .unwrap_or_else(lurkbot_state::default_owner_id);
        let store = lurkbot_agent::setup::open_state(&home, &config, Some(&owner))
            .inspect_err(|e| tracing::error!(error = %e, "the state store cannot be opened"))
            .ok();
        if let Some(store) = store.as_ref().filter(|s| s.backend() == "postgres") {
            approver.attach_store(store.clone());
        }
        Arc::new_cyclic(|me| Self {
            store,
            mcp,
            home,
            config: RwLock::new((0, Arc::new(config), approvals)),
            generation: AtomicU64::new(0),
            hub,
            approver,
            exec,
            irc,
            inbound: Mutex::new(Some(inbound)),
            slots: Mutex::new(HashMap::new()),
            bounds: crate::turns::bounds::Bounds::default(),
            uses: AtomicU64::new(0),
            runs: Mutex::new(Vec::new()),
            subagents: Subagents::default(),
            last_route: Mutex::new(("webchat".into(), None)),
            channels: Arc::default(),
            plugins: RwLock::default(),
            control: Mutex::new(None),
            drain: Arc::default(),
            me: me.clone(),
        })
    }

    /// The same host sending on `gateway`'s channels (a user's host on a shared gateway: the
    /// channels run once, on the gateway's).
    pub(crate) fn sharing_channels(self: Arc<Self>, gateway: &SessionHost) -> Arc<Self> {
        match Arc::try_unwrap(self) {
            Ok(mut host) => {
                host.channels = gateway.channels.clone();
                Arc::new_cyclic(|me| {
                    host.me = me.clone();
                    host
                })
            }
            Err(shared) => shared,
        }
    }

    /// Puts `config` in force: each session's next turn uses an agent made from it (a running
    /// turn ends with the settings it began with).
    pub fn replace_config(&self, config: Arc<Config>) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let approvals = Arc::new(Approvals::new(&self.home, config.approvals.clone()));
        let entry = (generation, config, approvals);
        match self.config.write() {
            Ok(mut c) => *c = entry,
            Err(poisoned) => *poisoned.into_inner() = entry,
        }
    }

    /// The settings in force now (a reload replaces them).
    pub(crate) fn config(&self) -> Arc<Config> {
        self.current().1
    }

    /// The settings in force: their generation, the config and its approval rules.
    pub(crate) fn current(&self) -> (u64, Arc<Config>, Arc<Approvals>) {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The terminal every session (and the `terminal.exec` method) runs commands in.
    pub fn exec(&self) -> Arc<TerminalExec> {
        self.exec.clone()
    }

    /// Runs one turn to its end, reporting its events on the hub tagged with `run_id` — all but
    /// the end, which [`SessionHost::report_end`] sends once the session is free again (so a
    /// client that sends on `final` never finds it busy); `on_event` sees every agent event
    /// too (the HTTP API streams from it). The flag says whether the turn started (a lifecycle
    /// `start` went out).
    ///
    /// # Errors
    /// `UNAVAILABLE` when no model is configured or the model failed.
    async fn turn(
        &self,
        key: &SessionKey,
        message: &str,
        options: &TurnOptions,
        run_id: &str,
        journal: Option<lurkbot_agent::journal::Journal>,
        on_event: &mut (dyn FnMut(&AgentEvent) + Send),
    ) -> (bool, Result<TurnOutcome, MethodError>) {
        let slot = self.slot(key);
        let mut guard = slot.agent.lock().await;
        let (generation, config, approvals) = self.current();
        if guard.as_ref().is_none_or(|(made_from, made_with, _)| {
            *made_from != generation || !made_with.same_agent(options)
        }) {
            let chosen = options.model.as_deref();
            let failover = match lurkbot_agent::setup::failover(&self.home, &config, chosen) {
                Ok(f) => f,
                Err(e) => {
                    // No model (or a broken one): the clients see the reason and its fix as
                    // the turn's error, like any failed turn, and can send again.
                    let message = e.to_string();
                    tracing::warn!(session = key.as_str(), run_id, error = %message, "no model for the turn");
                    return (
                        false,
                        Err(MethodError::new(ErrorCode::Unavailable, message)),
                    );
                }
            };
            let mut agent = Agent::new(self.home.clone(), (*config).clone(), failover)
                .with_mcp(self.mcp.clone())
                .with_approver(self.approver.clone())
                .with_shared(self.exec.clone(), approvals)
                .with_runtime(self.agent_runtime());
            let plugins = self.plugins();
            if plugins.has_tool_hooks() {
                agent = agent.with_tool_hook(plugins);
            }
            agent.set_run_budget(options.budget.clone());
            agent.set_untrusted_input(options.untrusted);
            agent.attach_images(options.images.clone());
            if let Some(level) = options.thinking.as_deref()
                && let Err(e) = agent.set_thinking(level)
            {
                return (
                    false,
                    Err(MethodError::new(ErrorCode::InvalidRequest, e.to_string())),
                );
            }
            *guard = Some((generation, options.clone(), agent));
        }
        let Some((_, _, agent)) = guard.as_mut() else {
            return (
                false,
                Err(MethodError::new(ErrorCode::Unavailable, "no agent")),
            );
        };
        let session = key.as_str().to_string();
        let hub = self.hub.clone();
        hub.emit(agent_event(
            run_id,
            &session,
            AgentStream::Lifecycle(Lifecycle {
                phase: LifecyclePhase::Start,
            }),
        ));
        let mut forward = |event: AgentEvent| {
            on_event(&event);
            if let Some(event) = hub_event(&event, run_id, &session) {
                hub.emit(event);
            }
        };
        agent.set_journal(journal);
        let outcome = match &options.resume {
            Some(at) => {
                agent
                    .resume(key, message, at.base, at.tool.as_deref(), &mut forward)
                    .await
            }
            None => agent.turn(key, message, &mut forward).await,
        };
        agent.set_journal(None);
        let outcome = outcome.map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()));
        (true, outcome)
    }

    /// Starts a turn in the background; returns its run id at once. An `ephemeral` session
    /// (a hook's or a stateless API request's own) has its resources released when the turn
    /// ends.
    ///
    /// # Errors
    /// `UNAVAILABLE` when the session already runs a turn, or the gateway is stopping.
    pub fn start(
        self: &Arc<Self>,
        key: SessionKey,
        message: String,
        ephemeral: bool,
    ) -> Result<String, MethodError> {
        self.spawn_turn(key, message, ephemeral, Box::new(|_| {}))
            .map(|(run_id, _)| run_id)
    }

    /// Like [`SessionHost::start`], with every agent event passed to `on_event` and the task's
    /// handle returned (it ends in `Err` when the turn was aborted). Every turn goes through
    /// here, so one runs per session and `chat.abort` reaches all of them.
    ///
    /// # Errors
    /// `UNAVAILABLE` when the session already runs a turn.
    pub fn spawn_turn(
        self: &Arc<Self>,
        key: SessionKey,
        message: String,
        ephemeral: bool,
        on_event: Box<dyn FnMut(&AgentEvent) + Send>,
    ) -> Result<(String, JoinHandle<Result<TurnOutcome, MethodError>>), MethodError> {
        self.spawn_with(key, message, TurnOptions::default(), ephemeral, on_event)
    }

    /// [`SessionHost::spawn_turn`] with the turn's own model or thinking level.
    ///
    /// # Errors
    /// `UNAVAILABLE` when the session already runs a turn.
    pub fn spawn_with(
        self: &Arc<Self>,
        key: SessionKey,
        message: String,
        options: TurnOptions,
        ephemeral: bool,
        on_event: Box<dyn FnMut(&AgentEvent) + Send>,
    ) -> Result<(String, JoinHandle<Result<TurnOutcome, MethodError>>), MethodError> {
        let run_id = format!("run_{}", lurkbot_core::random_hex(8));
        self.spawn_run(key, message, options, ephemeral, on_event, run_id)
    }

    /// [`SessionHost::start`] under the client's run id (OpenClaw's `idempotencyKey`); the same
    /// id twice is the same run (no second turn starts).
    ///
    /// # Errors
    /// `INVALID_REQUEST` for an id that is not 1–128 of `A-Za-z0-9._:-`; `UNAVAILABLE` when the
    /// session already runs another turn.
    pub fn start_as(
        self: &Arc<Self>,
        key: SessionKey,
        message: String,
        run_id: &str,
    ) -> Result<String, MethodError> {
        let valid = (1..=128).contains(&run_id.len())
            && run_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c));
        if !valid {
            return Err(MethodError::invalid(
                "idempotencyKey must be 1-128 letters, digits or ._:- characters",
            ));
        }
        let known = self
            .runs
            .lock()
            .map(|runs| runs.iter().any(|(id, _)| id == run_id))
            .unwrap_or(false);
        if known {
            return Ok(run_id.to_string());
        }
        // The journal decides, in one transaction: two requests with the same key arriving
        // together (a client retrying on a second connection) start one turn.
        let mut options = TurnOptions::default();
        let source = format!("run:{run_id}");
        if let Some(turn) = self.admit_source(run_id, &source, &key, &message, &options, false)? {
            return Ok(turn.id);
        }
        options.admitted = self.store().is_some();
        self.spawn_run(
            key,
            message,
            options,
            false,
            Box::new(|_| {}),
            run_id.to_string(),
        )
        .map(|(id, _)| id)
        .inspect_err(|_| self.withdraw(run_id))
    }

    /// Starts `message` as run `run_id` of session `key`, its events to `on_event`: the run id
    /// and the task that ends with the turn.
    pub(crate) fn spawn_run(
        self: &Arc<Self>,
        key: SessionKey,
        message: String,
        options: TurnOptions,
        ephemeral: bool,
        mut on_event: Box<dyn FnMut(&AgentEvent) + Send>,
        run_id: String,
    ) -> Result<(String, JoinHandle<Result<TurnOutcome, MethodError>>), MethodError> {
        self.drain.admit()?;
        if !self.current().1.has_agent(key.agent_id()) {
            return Err(crate::turns::run::unknown_agent(key.agent_id()));
        }
        let slot = self.slot(&key);
        let mut running = slot
            .running
            .lock()
            .map_err(|_| MethodError::new(ErrorCode::Unavailable, "session lock poisoned"))?;
        if let Some((run, _)) = running.as_ref() {
            return Err(MethodError::new(
                ErrorCode::Unavailable,
                format!(
                    "session {} is running {run}; wait for it or send chat.abort",
                    key.as_str()
                ),
            ));
        }
        let session_lease = self.hold_session(&key)?;
        let journal = self.journal_for(&run_id, &key, &message, &options, ephemeral)?;
        let (tx, rx) = watch::channel(None);
        if let Ok(mut runs) = self.runs.lock() {
            runs.push((run_id.clone(), rx));
            let excess = runs.len().saturating_sub(KEPT_RUNS);
            runs.drain(..excess);
        }
        let host = Arc::clone(self);
        let id = run_id.clone();
        let task_slot = Arc::clone(&slot);
        // The request's trace, or the one the caller works under (a hook's request).
        let parent = options.trace_parent.or_else(lurkbot_core::trace::current);
        let task = tokio::spawn(lurkbot_core::trace::scope(parent, async move {
            let _session_lease = session_lease;
            let mut span = lurkbot_agent::turn_trace::turn_span(&key, &id, &message);
            let (started, result) = lurkbot_core::trace::scope(
                span.context(),
                host.turn(&key, &message, &options, &id, journal, &mut *on_event),
            )
            .await;
            lurkbot_agent::turn_trace::end_turn_span(
                &mut span,
                result.as_ref().map_err(|e| e.message.as_str()),
            );
            let text = result.as_ref().map(|done| done.text.as_str());
            let voice = result
                .as_ref()
                .map(|d| d.voice_notes.as_slice())
                .unwrap_or_default();
            // Under the turn's span: its deliveries are its children.
            lurkbot_core::trace::within(span.context(), || {
                host.journal_end(
                    &id,
                    &options.origin,
                    text.map_err(|e| e.message.as_str()),
                    voice,
                );
            });
            let end = match &result {
                Ok(done) => RunEnd::Done {
                    text: done.text.clone(),
                    model: done.model.clone(),
                },
                Err(e) => RunEnd::Failed(e.message.clone()),
            };
            if let Ok(mut running) = task_slot.running.lock() {
                *running = None;
            }
            if ephemeral {
                host.forget(&key);
                host.irc.close(key.as_str()).await;
            }
            host.report_end(&id, key.as_str(), started, &result);
            drop(task_slot);
            host.trim();
            let _ = tx.send(Some(end));
            drop(span);
            result
        }));
        *running = Some((run_id.clone(), task.abort_handle()));
        if let Ok(mut last) = slot.last_run.lock() {
            *last = Some(run_id.clone());
        }
        Ok((run_id, task))
    }

    /// The end watch of a run this process runs or ran lately.
    pub(crate) fn live_run(&self, run_id: &str) -> Option<watch::Receiver<Option<RunEnd>>> {
        self.runs.lock().ok().and_then(|runs| {
            runs.iter()
                .find(|(id, _)| id == run_id)
                .map(|(_, rx)| rx.clone())
        })
    }

    /// Waits up to `timeout` for a run's end; `None` while it still runs.
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown run id.
    pub async fn wait(
        &self,
        run_id: &str,
        timeout: Duration,
    ) -> Result<Option<RunEnd>, MethodError> {
        let Some(mut rx) = self.live_run(run_id) else {
            // Not run by this process (it ended before a restart, or waits to be resumed):
            // the journal knows.
            return self.wait_journalled(run_id, timeout).await;
        };
        let waited = tokio::time::timeout(timeout, rx.wait_for(Option::is_some)).await;
        Ok(match waited {
            Ok(Ok(end)) => end.clone(),
            _ => None,
        })
    }

    /// Aborts the running turn of `key`, its sub-agents and the background work its turns
    /// started; false when no turn ran. The transcript records it.
    pub async fn abort(&self, key: &SessionKey) -> bool {
        let slot = self.slot(key);
        let tracked: Vec<AbortHandle> = slot
            .tracked
            .lock()
            .map(|mut t| t.drain(..).collect())
            .unwrap_or_default();
        for task in tracked {
            task.abort();
        }
        for child in self.subagents.children_of(key.as_str()) {
            if let Ok(child) = SessionKey::parse(&child) {
                Box::pin(self.release(&child)).await;
            }
        }
        let running = slot.running.lock().ok().and_then(|mut r| r.take());
        let Some((run_id, handle)) = running else {
            return false;
        };
        handle.abort();
        // A gateway that stops leaves the turn unended in its journal: the next start resumes
        // it. Otherwise someone cancelled it, and the transcript and the journal say so.
        if !self.drain.is_draining() {
            if let Some((_, _, agent)) = slot.agent.lock().await.as_ref() {
                let _ = agent.cancelled(key);
            }
            self.journal_end(
                &run_id,
                &crate::turns::run::Origin::Client,
                Err("aborted"),
                &[],
            );
        }
        self.finish_aborted(&run_id, key);
        true
    }

    fn finish_aborted(&self, run_id: &str, key: &SessionKey) {
        self.hub
            .emit(chat(run_id, key.as_str(), ChatState::Aborted));
        // The aborted task never sends its end: mark it here for agent.wait.
        if let Ok(mut runs) = self.runs.lock()
            && let Some(pos) = runs.iter().position(|(id, _)| id == run_id)
        {
            let (tx, rx) = watch::channel(Some(RunEnd::Aborted));
            drop(tx);
            runs[pos].1 = rx;
        }
    }

    /// Releases the session's resources (its running turn is aborted, its IRC connection
    /// closed with QUIT).
    pub async fn release(&self, key: &SessionKey) {
        self.abort(key).await;
        self.forget(key);
        self.irc.close(key.as_str()).await;
    }

    /// Aborts every running turn and releases everything (gateway shutdown).
    pub async fn shutdown(&self) {
        let keys = self.live_sessions();
        for key in keys {
            if let Ok(key) = SessionKey::parse(&key) {
                self.release(&key).await;
            }
        }
        self.irc.close_all().await;
    }

    /// The IRC connections.
    pub fn irc(&self) -> Arc<IrcSessions> {
        self.irc.clone()
    }

    /// The run a session is running now, if any.
    pub(crate) fn running_run(&self, key: &SessionKey) -> Option<String> {
        let slot = self.slots.lock().ok()?.get(key.as_str()).cloned()?;
        let running = slot.running.lock().ok()?;
        running.as_ref().map(|(run, _)| run.clone())
    }
}
