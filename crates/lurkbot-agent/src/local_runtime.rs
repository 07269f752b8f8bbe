//! The CLI's [`Runtime`]: turns run as tasks of this process, one at a time per session, each
//! with an agent made for it; sub-agents and their announce turns are tracked so `lurkbot agent`
//! can wait for all of them ([`LocalRuntime::idle`]). Without a gateway there is no IRC
//! connection: `webchat` delivery appends to the main session (the web UI shows it), `irc`
//! says it needs the gateway.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_term::TerminalExec;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::approvals::{Approvals, Approver};
use crate::gate::{self, Act, Hold, Standing};
use crate::runner::{Agent, AgentEvent};
use crate::runtime::{BoxFuture, Outbound, Runtime, TurnHandle, TurnRequest};
use crate::session_notes::{append_to_main, append_user, record_cancelled};
use crate::subagents::Subagents;

/// What the runtime reports of every turn it runs: the session and the agent's event.
pub type EventSink = Arc<dyn Fn(&SessionKey, &AgentEvent) + Send + Sync>;

/// Turns of this process.
pub struct LocalRuntime {
    home: Home,
    config: Config,
    approver: Arc<dyn Approver>,
    exec: Arc<TerminalExec>,
    approvals: Arc<Approvals>,
    on_event: EventSink,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    running: Mutex<HashMap<String, (String, AbortHandle)>>,
    tracked: AtomicUsize,
    settled: Notify,
    subagents: Subagents,
    mcp: Arc<crate::mcp::McpHub>,
    me: Weak<LocalRuntime>,
}

impl LocalRuntime {
    /// The MCP servers of `[mcp.servers]` (start them before the first turn; they stop with
    /// the process).
    pub fn mcp(&self) -> &Arc<crate::mcp::McpHub> {
        &self.mcp
    }

    /// A runtime for `home`; `on_event` sees every turn's events.
    pub fn new(
        home: Home,
        config: Config,
        approver: Arc<dyn Approver>,
        on_event: EventSink,
    ) -> Arc<Self> {
        let exec = Arc::new(TerminalExec::new(
            home.clone(),
            lurkbot_term::default_registry(),
        ));
        let approvals = Arc::new(Approvals::new(&home, config.approvals.clone()));
        let mcp = crate::mcp::McpHub::new(&home, &config.mcp);
        Arc::new_cyclic(|me| Self {
            mcp,
            home,
            config,
            approver,
            exec,
            approvals,
            on_event,
            locks: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            tracked: AtomicUsize::new(0),
            settled: Notify::new(),
            subagents: Subagents::default(),
            me: me.clone(),
        })
    }

    /// Waits until every tracked task (sub-agents and their announce turns, background
    /// sends and cron runs) has ended.
    pub async fn idle(&self) {
        loop {
            let settled = self.settled.notified();
            if self.tracked.load(Ordering::SeqCst) == 0 {
                return;
            }
            settled.await;
        }
    }

    fn lock_for(&self, session: &SessionKey) -> Arc<tokio::sync::Mutex<()>> {
        match self.locks.lock() {
            Ok(mut locks) => locks
                .entry(session.as_str().to_string())
                .or_default()
                .clone(),
            Err(_) => Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    fn agent(&self, request: &TurnRequest) -> Result<Agent, String> {
        let failover = crate::setup::failover(&self.home, &self.config, request.model.as_deref())
            .map_err(|e| e.to_string())?;
        let mut agent = Agent::new(self.home.clone(), self.config.clone(), failover)
            .with_approver(self.approver.clone())
            .with_shared(self.exec.clone(), self.approvals.clone());
        if !self.mcp.is_empty() {
            agent = agent.with_mcp(self.mcp.clone());
        }
        if let Some(me) = self.me.upgrade() {
            agent = agent.with_runtime(me);
        }
        if let Some(level) = request.thinking.as_deref() {
            agent.set_thinking(level).map_err(|e| e.to_string())?;
        }
        agent.set_run_budget(request.budget.clone());
        Ok(agent)
    }
}

impl Runtime for LocalRuntime {
    fn start(&self, request: TurnRequest) -> BoxFuture<'_, Result<TurnHandle, String>> {
        Box::pin(async move {
            let guard = self.lock_for(&request.session).lock_owned().await;
            let mut agent = self.agent(&request)?;
            let run_id = format!("run_{}", lurkbot_core::random_hex(8));
            let on_event = self.on_event.clone();
            let session = request.session.clone();
            let me = self.me.clone();
            let id = run_id.clone();
            // Held while the task starts, so a turn that ends at once cannot finish before it
            // is registered (it would stay "busy" for ever).
            let mut running = self
                .running
                .lock()
                .map_err(|_| "the runtime's lock is poisoned".to_string())?;
            let task = tokio::spawn(async move {
                let mut sink = |event: AgentEvent| on_event(&session, &event);
                let mut span = crate::turn_trace::turn_span(&session, &id, &request.message);
                let result = lurkbot_core::trace::scope(
                    span.context(),
                    agent.turn(&session, &request.message, &mut sink),
                )
                .await
                .map_err(|e| e.to_string());
                crate::turn_trace::end_turn_span(
                    &mut span,
                    result.as_ref().map_err(String::as_str),
                );
                if let Some(me) = me.upgrade()
                    && let Ok(mut running) = me.running.lock()
                    && running
                        .get(session.as_str())
                        .is_some_and(|(run, _)| *run == id)
                {
                    running.remove(session.as_str());
                }
                drop(guard);
                result
            });
            running.insert(
                request.session.as_str().to_string(),
                (run_id.clone(), task.abort_handle()),
            );
            drop(running);
            Ok(TurnHandle {
                run_id,
                done: Box::pin(async move {
                    match task.await {
                        Ok(result) => result,
                        Err(_) => Err("aborted".to_string()),
                    }
                }),
            })
        })
    }

    fn busy(&self, session: &SessionKey) -> bool {
        self.running
            .lock()
            .map(|r| r.contains_key(session.as_str()))
            .unwrap_or(false)
    }

    fn abort<'a>(&'a self, session: &'a SessionKey) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let running = self
                .running
                .lock()
                .ok()
                .and_then(|mut r| r.remove(session.as_str()));
            if let Some((_, handle)) = running {
                handle.abort();
                let _ = record_cancelled(&self.home, session);
            }
        })
    }

    fn deliver(&self, message: Outbound) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            match message.channel.as_str() {
                "webchat" | "last"
                    if message.asker.is_owner() && message.from == SessionKey::main() =>
                {
                    // A heartbeat's or main-session job's reply is already in the main session.
                    Ok("webchat (agent:main:main)".into())
                }
                "webchat" | "last" => {
                    let act = Act::Message {
                        channel: "webchat",
                        to: "agent:main:main",
                        standing: Standing::OwnersDefault,
                        pairing: false,
                        from_third_party: gate::is_third_party(&self.home, &self.config, &message.from),
                    };
                    gate::clear(
                        gate::decide(message.asker, &act),
                        Hold {
                            approver: &*self.approver,
                            approvals: &self.approvals,
                            session: message.from.as_str(),
                            tool: "message",
                            summary: format!("webchat: {}", message.text.chars().take(200).collect::<String>()),
                            key: "message:webchat:agent:main:main".into(),
                        },
                    )
                    .await?;
                    // Never written into a turn in progress (it would split a tool call from
                    // its result): while the main session runs, it waits for the turn's end.
                    let lock = self.lock_for(&SessionKey::main());
                    if let Ok(_free) = lock.clone().try_lock_owned() {
                        append_to_main(&self.home, &message.text)?;
                        return Ok("webchat (agent:main:main)".into());
                    }
                    let home = self.home.clone();
                    self.track(
                        &message.from,
                        Box::pin(async move {
                            let _free = lock.lock_owned().await;
                            if let Err(e) = append_to_main(&home, &message.text) {
                                tracing::warn!(error = %e, "webchat message not written");
                            }
                        }),
                    );
                    Ok("webchat (agent:main:main, after its running turn)".into())
                }
                "irc" => Err(
                    "irc delivery goes through the running gateway's IRC connection; start `lurkbot gateway`"
                        .into(),
                ),
                other => Err(format!("unknown channel '{other}'")),
            }
        })
    }

    fn inject<'a>(
        &'a self,
        session: &'a SessionKey,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let _free = self.lock_for(session).lock_owned().await;
            append_user(&self.home, session, text)
        })
    }

    fn track(&self, _requester: &SessionKey, task: BoxFuture<'static, ()>) {
        self.tracked.fetch_add(1, Ordering::SeqCst);
        let me = self.me.clone();
        tokio::spawn(async move {
            task.await;
            if let Some(me) = me.upgrade() {
                me.tracked.fetch_sub(1, Ordering::SeqCst);
                me.settled.notify_waiters();
            }
        });
    }

    fn subagents(&self) -> &Subagents {
        &self.subagents
    }
}
