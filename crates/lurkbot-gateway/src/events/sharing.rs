//! Events across gateways (ARCHITECTURE.md §6.3): on PostgreSQL a client connected to any
//! gateway sees the events of every turn, whichever gateway runs it. What the hub emits about
//! turns and the timers — `chat`, `agent`, `cron`, `heartbeat`, `budget.exceeded`, `canvas` —
//! is handed to a publisher thread (a bounded queue: a turn never waits for it; what a full
//! queue cannot take is dropped and counted) that writes it in batches through the state
//! store; the store's follower hands what the other gateways published to this hub's
//! connections. Frames about a connection or this process (`tick`, `shutdown`, …), the memory
//! index (each gateway keeps its own) and approvals (answered on the gateway that asks) stay
//! local.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Mutex, OnceLock};

use lurkbot_state::{Follower, Store};

use crate::protocol::{Event, EventFrame};

/// Events waiting for the publisher at most.
const QUEUE: usize = 4096;
/// Events written in one statement at most.
const BATCH: usize = 256;

/// A hub's link to the other gateways: unset on the embedded store.
#[derive(Debug)]
pub(crate) struct Sharing {
    publisher: OnceLock<SyncSender<Event>>,
    follower: Mutex<Option<Follower>>,
    dropped: AtomicU64,
    /// Approvals answered on other gateways: (approval id, decision), for the approver whose
    /// turn waits here.
    resolutions: tokio::sync::broadcast::Sender<(String, String)>,
}

impl Default for Sharing {
    fn default() -> Self {
        Self {
            publisher: OnceLock::new(),
            follower: Mutex::new(None),
            dropped: AtomicU64::new(0),
            resolutions: tokio::sync::broadcast::channel(64).0,
        }
    }
}

impl Sharing {
    /// Queues `event` for the other gateways when it is theirs to see.
    pub(crate) fn publish(&self, event: &Event) {
        let Some(publisher) = self.publisher.get() else {
            return;
        };
        if !shared(event) {
            return;
        }
        match publisher.try_send(event.clone()) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::warn!(
                        dropped,
                        "events for the other gateways dropped: the database does not keep up"
                    );
                }
            }
        }
    }

    /// Whether events go to other gateways (the state is in PostgreSQL).
    pub(crate) fn on(&self) -> bool {
        self.publisher.get().is_some()
    }

    /// Approvals answered on other gateways, from now on.
    pub(crate) fn resolutions(&self) -> tokio::sync::broadcast::Receiver<(String, String)> {
        self.resolutions.subscribe()
    }

    /// Events not shared because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Whether the clients of other gateways see `event`.
fn shared(event: &Event) -> bool {
    matches!(
        event,
        Event::Chat(_)
            | Event::Agent(_)
            | Event::Cron(_)
            | Event::Heartbeat(_)
            | Event::BudgetExceeded(_)
            | Event::Canvas(_)
            | Event::ApprovalRequested(_)
            | Event::ApprovalResolved(_)
    )
}

impl Sharing {
    /// Links a hub to the other gateways on `store`'s database (nothing on the embedded store):
    /// a publisher thread, and the store's follower emitting their events to `here`, the hub's
    /// own sender (the follower's thread must not keep the hub, and so itself, alive once the
    /// hub's state is gone).
    pub(crate) fn start(
        &self,
        here: tokio::sync::broadcast::Sender<std::sync::Arc<Event>>,
        store: &Store,
    ) {
        if !store.shares_events() || self.publisher.get().is_some() {
            return;
        }
        let resolved = self.resolutions.clone();
        let follower = store.follow_events(move |batch| {
            for shared in batch {
                let Ok(mut frame) = serde_json::from_str::<serde_json::Value>(&shared.payload)
                else {
                    continue;
                };
                frame["type"] = "event".into();
                if let Some(frame) = EventFrame::parse(&frame) {
                    if let Event::ApprovalResolved(r) = &frame.event {
                        let _ = resolved.send((r.approval_id.clone(), r.decision.clone()));
                    }
                    let _ = here.send(std::sync::Arc::new(frame.event));
                }
            }
        });
        match follower {
            Ok(follower) => {
                if let Ok(mut held) = self.follower.lock() {
                    *held = follower;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "other gateways' events are not followed");
            }
        }
        let (tx, rx) = sync_channel(QUEUE);
        let store = store.clone();
        let started = std::thread::Builder::new()
            .name("lurkbot-publish".into())
            .spawn(move || publish_loop(&rx, &store));
        match started {
            Ok(_) => {
                let _ = self.publisher.set(tx);
            }
            Err(e) => tracing::warn!(error = %e, "events are not shared with the other gateways"),
        }
    }
}

/// How long the publisher gathers events after the first of a batch: a turn's few events
/// (its start, text, end) go to the database in one round trip instead of one each — the
/// round trips were a tenth of a turn's CPU on PostgreSQL — and another gateway's client sees
/// them at most this much later.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

/// Writes what the hub queued, in batches, until the hub is gone.
fn publish_loop(rx: &Receiver<Event>, store: &Store) {
    while let Ok(first) = rx.recv() {
        let mut batch = Vec::with_capacity(BATCH);
        batch.extend(serde_json::to_string(&first).ok());
        let until = std::time::Instant::now() + GATHER;
        while batch.len() < BATCH {
            let left = until.saturating_duration_since(std::time::Instant::now());
            let Ok(next) = rx.recv_timeout(left) else {
                break;
            };
            batch.extend(serde_json::to_string(&next).ok());
        }
        if let Err(e) = store.publish_events(batch) {
            tracing::warn!(error = %e, "events not shared with the other gateways");
        }
    }
}
