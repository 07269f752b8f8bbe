//! Server events fanned out to every connected client (each connection numbers them with its
//! own `seq`), and the approver that asks those clients.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lurkbot_agent::DecisionFuture;
use lurkbot_agent::{ApprovalRequest, Approver, Decision};
use tokio::sync::{Notify, broadcast, oneshot};

use crate::protocol::{ApprovalRequested, ApprovalResolved, Event};

/// How long an approval waits before it counts as denied.
pub(crate) const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

/// How long an approval of a turn resumed after a restart waits for a client to come back
/// before it counts as one nobody can answer.
const RECONNECT_GRACE: Duration = Duration::from_secs(30);

/// The event fan-out.
#[derive(Debug, Clone)]
pub struct Hub {
    /// Shared, not copied: the channel's 1,024 slots are written when it is made, and slots
    /// holding whole events took 212 KiB of an idle gateway's memory (32 KiB with a pointer
    /// each).
    tx: broadcast::Sender<Arc<Event>>,
    /// Told when a listener joins.
    joined: Arc<Notify>,
    /// Other gateways' share of the events, on PostgreSQL (`sharing.rs`).
    pub(crate) sharing: Arc<crate::events::sharing::Sharing>,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(1024).0,
            joined: Arc::default(),
            sharing: Arc::default(),
        }
    }
}

impl Hub {
    /// Sends `event` to every connection (dropped when none listens), and to the clients of
    /// the other gateways when the state is shared.
    pub fn emit(&self, event: Event) {
        self.sharing.publish(&event);
        let _ = self.tx.send(Arc::new(event));
    }

    /// What sends to this gateway's connections only (events another gateway published).
    pub(crate) fn local_sender(&self) -> broadcast::Sender<Arc<Event>> {
        self.tx.clone()
    }

    /// Links this hub to the other gateways sharing `store` (nothing on the embedded store).
    pub(crate) fn share_on(&self, store: &lurkbot_state::Store) {
        self.sharing.start(self.local_sender(), store);
    }

    /// A new listener.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        let rx = self.tx.subscribe();
        self.joined.notify_waiters();
        rx
    }

    /// Connections listening now.
    pub fn listeners(&self) -> usize {
        self.tx.receiver_count()
    }

    /// Whether a listener is there, waiting up to [`RECONNECT_GRACE`] for one to come.
    async fn someone_comes(&self) -> bool {
        let until = Instant::now() + RECONNECT_GRACE;
        if self.listeners() == 0 {
            tracing::info!("an approval waits for a client to come back after the restart");
        }
        loop {
            let joined = self.joined.notified();
            if self.listeners() > 0 {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, joined).await.is_err() {
                return self.listeners() > 0;
            }
        }
    }
}

/// Asks the connected clients: emits `exec.approval.requested` and waits for
/// `exec.approval.resolve`; nobody answering within [`APPROVAL_TIMEOUT`] denies, and with no
/// client connected at all (an API-only turn) the call is denied at once — except for a turn
/// resumed after a restart, whose clients may be on their way back (up to 30 s), and on
/// PostgreSQL, where the request reaches the clients of every gateway and an answer given on
/// any of them comes back as `exec.approval.resolved` (`sharing.rs`).
#[derive(Debug, Default)]
pub struct ClientApprover {
    hub: Hub,
    /// Sessions whose turn is being resumed after a restart.
    resumed: Mutex<std::collections::HashSet<String>>,
    pending: Mutex<HashMap<String, (ApprovalRequested, oneshot::Sender<Decision>)>>,
    /// The home's store when it is shared (PostgreSQL): where other gateways say they have
    /// clients (`presence.rs`).
    store: std::sync::OnceLock<lurkbot_state::Store>,
}

impl ClientApprover {
    /// An approver emitting on `hub`.
    pub fn new(hub: Hub) -> Self {
        Self {
            hub,
            resumed: Mutex::default(),
            pending: Mutex::new(HashMap::new()),
            store: std::sync::OnceLock::new(),
        }
    }

    /// Asks `store` (shared by several gateways) whether a client is connected elsewhere
    /// before an approval waits with none here.
    pub(crate) fn attach_store(&self, store: lurkbot_state::Store) {
        let _ = self.store.set(store);
    }

    /// Marks `session`'s turn as resumed after a restart (`true`) or over (`false`): while it
    /// is, an approval it asks waits for a client to come back instead of being denied.
    pub(crate) fn resuming(&self, session: &str, on: bool) {
        if let Ok(mut resumed) = self.resumed.lock() {
            if on {
                resumed.insert(session.to_string());
            } else {
                resumed.remove(session);
            }
        }
    }

    /// Resolves a pending approval; false when no such approval waits.
    pub fn resolve(&self, approval_id: &str, decision: Decision) -> bool {
        let sender = self
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.remove(approval_id));
        let resolved = sender.is_some_and(|(_, s)| s.send(decision).is_ok());
        if resolved {
            self.announce(approval_id, decision);
        }
        resolved
    }

    /// Tells the clients (of every gateway sharing the state) that `approval_id` was answered;
    /// the gateway whose turn waits for it, if another, resolves it then.
    pub(crate) fn announce(&self, approval_id: &str, decision: Decision) {
        let decision = serde_json::to_value(decision)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        self.hub.emit(Event::ApprovalResolved(ApprovalResolved {
            approval_id: approval_id.to_string(),
            decision,
        }));
    }

    /// Whether an answer given on another gateway reaches this one (the state is shared).
    pub(crate) fn shared(&self) -> bool {
        self.hub.sharing.on()
    }

    /// The approvals waiting now, oldest first by id: this gateway's, and (several gateways on
    /// PostgreSQL) those waiting on the others (`approvals.rs`).
    pub fn pending_list(&self) -> Vec<ApprovalRequested> {
        let mut list: Vec<ApprovalRequested> = self
            .pending
            .lock()
            .map(|p| p.values().map(|(request, _)| request.clone()).collect())
            .unwrap_or_default();
        if let Some(store) = self.store.get().filter(|_| self.shared()) {
            let local: Vec<String> = list.iter().map(|r| r.approval_id.clone()).collect();
            list.extend(crate::events::approvals::elsewhere(store, &local));
        }
        list.sort_by(|a, b| a.approval_id.cmp(&b.approval_id));
        list
    }

    /// Approvals waiting now.
    pub fn pending(&self) -> usize {
        self.pending.lock().map(|p| p.len()).unwrap_or(0)
    }
}

impl Approver for ClientApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin(async move {
            let resumed = self
                .resumed
                .lock()
                .is_ok_and(|r| r.contains(&request.session));
            // Someone here, or (several gateways) on another gateway; a resumed turn waits
            // for someone to come back.
            let elsewhere = async {
                match self.store.get() {
                    Some(store) if self.shared() => crate::events::presence::elsewhere(store).await,
                    _ => false,
                }
            };
            let heard = match self.hub.listeners() {
                0 if elsewhere.await => true,
                0 if resumed => self.hub.someone_comes().await,
                n => n > 0,
            };
            if !heard {
                return Decision::Deny;
            }
            let approval_id = format!("appr_{}", lurkbot_core::random_hex(8));
            let (tx, rx) = oneshot::channel();
            let requested = ApprovalRequested {
                approval_id: approval_id.clone(),
                session_key: request.session.clone(),
                call_id: request.id.clone(),
                tool: request.tool.clone(),
                summary: request.summary.clone(),
                reason: request.reason.clone(),
                key: request.key.clone(),
                allow_always: !request.once,
                timeout_ms: u64::try_from(APPROVAL_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            };
            if let Ok(mut pending) = self.pending.lock() {
                pending.insert(approval_id.clone(), (requested.clone(), tx));
            }
            let shared_store = self.store.get().filter(|_| self.shared());
            if let Some(store) = shared_store {
                crate::events::approvals::record(store, &requested);
            }
            let mut elsewhere = self.hub.sharing.resolutions();
            self.hub.emit(Event::ApprovalRequested(requested));
            let answered_elsewhere = async {
                loop {
                    match elsewhere.recv().await {
                        Ok((id, decision)) if id == approval_id => {
                            if let Ok(decision) = decision.parse::<Decision>() {
                                return decision;
                            }
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await;
                        }
                    }
                }
            };
            let answered = async {
                tokio::select! {
                    here = rx => here.ok(),
                    there = answered_elsewhere => Some(there),
                }
            };
            let decision = tokio::time::timeout(APPROVAL_TIMEOUT, answered)
                .await
                .ok()
                .flatten()
                .unwrap_or(Decision::Deny);
            if let Ok(mut pending) = self.pending.lock() {
                pending.remove(&approval_id);
            }
            if let Some(store) = shared_store {
                crate::events::approvals::forget(store, &approval_id);
            }
            decision
        })
    }
}
