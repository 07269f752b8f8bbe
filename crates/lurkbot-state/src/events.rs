//! Events shared between gateways on PostgreSQL (ARCHITECTURE.md §6.3): a client connected to
//! any gateway sees the events of a turn whichever gateway runs it. A gateway publishes its
//! events as rows of `events` and a `NOTIFY lurkbot_events` carrying the newest id, in one
//! statement; every gateway `LISTEN`s on a connection of its own and, told, reads the rows
//! after the last it saw that another gateway wrote. Rows older than a minute are deleted (a
//! gateway that reconnects reads what it missed meanwhile). On the embedded store there is
//! nothing to share with: [`Store::shares_events`] is false and both calls do nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::postgres::{Ready, connect, db};
use crate::{Backend, StateError, Store};

/// The channel gateways `LISTEN` on.
const CHANNEL: &str = "lurkbot_events";
/// How long a follower waits for a notification before it looks at its stop flag.
const WAIT: Duration = Duration::from_secs(1);
/// How often a follower reads the table without being told (a notification lost with a
/// connection).
const FALLBACK_READ: Duration = Duration::from_secs(10);
/// How long published events are kept.
const KEEP_MS: i64 = 60_000;

/// An event another gateway published: its frame, as that gateway serialized it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedEvent {
    /// The publishing gateway (`<id>:<incarnation>`).
    pub origin: String,
    /// The event.
    pub payload: String,
}

/// A running follower: stops (within a second) when dropped.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<AtomicBool>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Store {
    /// Whether other gateways can see this store's events (PostgreSQL).
    pub fn shares_events(&self) -> bool {
        matches!(&*self.backend, Backend::Postgres(_))
    }

    /// This store's name on published events.
    fn origin(&self) -> String {
        format!("{}:{}", self.owner.id(), self.owner.incarnation())
    }

    /// Publishes `payloads` for the other gateways, in one statement (nothing on the embedded
    /// store).
    ///
    /// # Errors
    /// Store failures.
    pub fn publish_events(&self, payloads: Vec<String>) -> Result<(), StateError> {
        let Backend::Postgres(pg) = &*self.backend else {
            return Ok(());
        };
        if payloads.is_empty() {
            return Ok(());
        }
        let origin = self.origin();
        let lock = crate::postgres::advisory_key(&format!(
            "events:{}",
            pg.schema.as_deref().unwrap_or("")
        ));
        // On the connection aside: events never queue in front of a turn's statements.
        pg.aside()?.call(move |conn| {
            let Ready { client, .. } = conn.ready()?;
            let now = lurkbot_core::now_ms() as i64;
            // One statement, so one round trip and its own transaction: the lock (taken before
            // any id is drawn: the rows to insert need the lock's row) makes publishers take
            // turns until their commit, so ids are committed in the order they are drawn and a
            // follower that read up to an id never finds a smaller one committed later. The
            // notification names its origin, so a gateway does not read back its own events.
            client
                .execute(
                    "WITH l AS (SELECT pg_advisory_xact_lock($4)), \
                     e AS (INSERT INTO events (origin, payload, created_ms) \
                         SELECT $1, p, $3 FROM unnest($2::text[]) AS p, l RETURNING id) \
                     SELECT pg_notify('lurkbot_events', COALESCE(max(id), 0)::text || ' ' || $1) FROM e",
                    &[&origin, &payloads, &now, &lock],
                )
                .map_err(db)?;
            Ok(())
        })
    }

    /// Follows the events other gateways publish from now on: a thread with a connection of
    /// its own calls `deliver` with each batch, oldest first, until the [`Follower`] is
    /// dropped. Returns once it listens. `None` on the embedded store. A connection lost later
    /// is made again every second, and what was published meanwhile is delivered then.
    ///
    /// # Errors
    /// The thread cannot be started, or its first connection fails.
    pub fn follow_events(
        &self,
        mut deliver: impl FnMut(Vec<SharedEvent>) + Send + 'static,
    ) -> Result<Option<Follower>, StateError> {
        let Backend::Postgres(pg) = &*self.backend else {
            return Ok(None);
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (url, schema, me) = (pg.url.clone(), pg.schema.clone(), self.origin());
        let stopped = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("lurkbot-events".into())
            .spawn(move || {
                let mut last = None;
                let mut ready = Some(ready_tx);
                while !stopped.load(Ordering::Relaxed) {
                    let followed = follow(
                        &url,
                        schema.as_deref(),
                        &me,
                        &mut last,
                        &stopped,
                        &mut ready,
                        &mut deliver,
                    );
                    if let Err(e) = followed {
                        if let Some(first) = ready.take() {
                            let _ = first.send(Err(e));
                            return;
                        }
                        tracing::warn!(error = %e, "following other gateways' events: connecting again in 1 s");
                        std::thread::sleep(WAIT);
                    }
                }
            })
            .map_err(|e| StateError::Postgres(format!("cannot start the events' thread: {e}")))?;
        ready_rx.recv().map_err(|_| {
            StateError::Postgres("the events' thread stopped before it listened".into())
        })??;
        Ok(Some(Follower { stop }))
    }
}

/// One connection's life of following: returns on `stop`, fails when the connection does.
fn follow(
    url: &crate::StateUrl,
    schema: Option<&str>,
    me: &str,
    last: &mut Option<i64>,
    stop: &AtomicBool,
    ready: &mut Option<std::sync::mpsc::SyncSender<Result<(), StateError>>>,
    deliver: &mut dyn FnMut(Vec<SharedEvent>),
) -> Result<(), StateError> {
    let mut client = connect(url)?;
    if let Some(schema) = schema {
        client
            .batch_execute(&format!("SET search_path TO \"{schema}\""))
            .map_err(db)?;
    }
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .map_err(db)?;
    if last.is_none() {
        let row = client
            .query_one("SELECT COALESCE(max(id), 0) FROM events", &[])
            .map_err(db)?;
        *last = Some(row.get(0));
    }
    if let Some(first) = ready.take() {
        let _ = first.send(Ok(()));
    }
    let mut read_at = Instant::now();
    let mut pruned_at = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let told = {
            use postgres::fallible_iterator::FallibleIterator;
            let mut notifications = client.notifications();
            // Told by another gateway: a notification this one sent names it (`<id> <origin>`)
            // and needs no read.
            let others = |n: &postgres::Notification| {
                n.payload().split_once(' ').is_none_or(|(_, o)| o != me)
            };
            let first = notifications.timeout_iter(WAIT).next().map_err(db)?;
            let mut told = first.as_ref().is_some_and(others);
            // Whatever else came meanwhile is read with it.
            while let Some(next) = notifications.iter().next().map_err(db)? {
                told |= others(&next);
            }
            told
        };
        if told || read_at.elapsed() >= FALLBACK_READ {
            read_at = Instant::now();
            let after = last.unwrap_or(0);
            let rows = client
                .query(
                    "SELECT id, origin, payload FROM events WHERE id > $1 AND origin <> $2 \
                     ORDER BY id LIMIT 1000",
                    &[&after, &me],
                )
                .map_err(db)?;
            if let Some(newest) = rows.last() {
                *last = Some(newest.get(0));
            }
            let batch: Vec<SharedEvent> = rows
                .iter()
                .map(|row| SharedEvent {
                    origin: row.get(1),
                    payload: row.get(2),
                })
                .collect();
            if !batch.is_empty() {
                deliver(batch);
            }
        }
        if pruned_at.elapsed() >= Duration::from_millis(KEEP_MS as u64) {
            pruned_at = Instant::now();
            let before = lurkbot_core::now_ms() as i64 - KEEP_MS;
            client
                .execute("DELETE FROM events WHERE created_ms < $1", &[&before])
                .map_err(db)?;
        }
        if client.is_closed() {
            return Err(StateError::Postgres("the events' connection closed".into()));
        }
    }
    Ok(())
}
