//! LurkBot's durable state behind one seam (ARCHITECTURE.md §6.3): what must survive a crash,
//! a restart or a deploy so that every message is answered exactly once.
//!
//! - **Inbound** ([`inbound`]): a channel's message is recorded with its source id before the
//!   platform is told it arrived; one still unhandled at start is handled then.
//! - **Turns** ([`turns`]): every message that can start a turn is admitted with its source
//!   id before its source is acknowledged; one source id never starts two turns. A turn moves
//!   `queued → running → done | failed`, with the step it reached and the tool call in flight,
//!   and the gateway resumes every unfinished one at start.
//! - **Outbox** ([`outbox`]): every message the gateway sends on a channel is recorded before
//!   it is sent, and marked sent with the platform's id; an unsent one is sent after a restart,
//!   a permanent failure is kept and shown.
//!
//! - **Leases** ([`leases`]): which gateway runs an unended turn. A turn is leased to the
//!   gateway that admitted it; another gateway (or the next start) takes it over only once its
//!   holder is gone.
//! - **Budget holds** ([`holds`]): what model calls in flight hold against the budgets, so
//!   that calls on several gateways are checked against each other's estimates.
//! - **Usage records** ([`usage`]): on PostgreSQL, each model call's record, so every gateway
//!   reads the same figures.
//! - **Documents and logs** ([`documents`]): on PostgreSQL, the home's JSON files and
//!   JSON-lines logs that gateways change (the cron jobs and their runs), edited in one
//!   transaction each.
//! - **Sign-ins** ([`sign_ins`]): on PostgreSQL, the web UI's sign-ins, known to every gateway.
//! - **Sign-in attempts** (`Store::begin_attempt`): counted before a password is checked, so
//!   the sign-in limits hold across gateways.
//!
//! Two backends stand behind [`Store`]: the embedded store, `state/state.sqlite` in the home
//! (SQLite, WAL), the default; and a PostgreSQL database several gateways share
//! (`[state] url`, [`Location`]). Both run the same statements (`sql.rs`).

mod attempts;
mod deferred;
pub mod documents;
mod embedded;
mod error;
pub mod events;
pub mod holds;
pub mod inbound;
pub mod leases;
mod location;
pub mod migrate;
pub mod outbox;
mod pg_logs;
mod pg_tls;
mod postgres;
pub mod shared;
pub mod sign_ins;
mod sql;
pub mod together;
pub mod turns;
pub mod usage;
mod user_schema;

pub use documents::Edit;
pub use embedded::STATE_FILE;
pub use error::StateError;
pub use events::{Follower, SharedEvent};
pub use holds::{HOLD_TTL_MS, Held, HeldSums};
pub use inbound::Received;
pub use leases::{LEASE_RENEW_MS, LEASE_TTL_MS, Lease, default_owner_id};
pub use location::{Location, STATE_PASSWORD_VAR, STATE_URL_VAR, StateUrl};
pub use migrate::{Counts, HomeFiles, Migrated};
pub use outbox::{NewOutgoing, Outgoing, OutgoingState};
pub use sign_ins::StoredSignIn;
pub use together::Together;
pub use turns::{Admitted, NewTurn, TurnRecord, TurnState};
pub use usage::UsageRow;

use std::sync::{Arc, Mutex};

use lurkbot_core::Home;

use crate::sql::{Lite, Sql};

/// The durable state of one home. Cheap to clone (one shared connection).
#[derive(Clone)]
pub struct Store {
    backend: Arc<Backend>,
    owner: Arc<leases::Owner>,
    /// Writes of turns' ends waiting to be recorded (`deferred.rs`).
    deferred: Arc<deferred::Deferred>,
}

/// A [`Store`] that does not keep it open: what a process-wide registry holds, so that the
/// store still closes (and its gateway's locks go) when its owner drops it.
#[derive(Clone, Default)]
pub struct WeakStore {
    backend: std::sync::Weak<Backend>,
    owner: std::sync::Weak<leases::Owner>,
    deferred: std::sync::Weak<deferred::Deferred>,
}

impl WeakStore {
    /// The store, while it is open.
    pub fn upgrade(&self) -> Option<Store> {
        Some(Store {
            backend: self.backend.upgrade()?,
            owner: self.owner.upgrade()?,
            deferred: self.deferred.upgrade()?,
        })
    }
}

/// Where a store's rows live.
enum Backend {
    /// `state/state.sqlite` in the home.
    Embedded(Mutex<rusqlite::Connection>),
    /// A PostgreSQL database several gateways share.
    Postgres(Box<postgres::Pg>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.backend {
            Backend::Embedded(_) => f.write_str("Store(embedded)"),
            Backend::Postgres(pg) => write!(f, "Store(postgres {})", pg.target()),
        }
    }
}

impl Store {
    /// Opens (creating) the embedded store of `home`: `state/state.sqlite`, private, in WAL
    /// mode, its schema brought up to date. Its leases carry a new owner id
    /// ([`default_owner_id`]).
    ///
    /// # Errors
    /// The folder or the database cannot be opened, or its schema is newer than this build.
    pub fn open(home: &Home) -> Result<Self, StateError> {
        Self::open_at(home, &Location::Embedded, None)
    }

    /// [`Store::open`] for the gateway `owner` (`[gateway] id`): the leases it takes carry
    /// it, and it says at once that it runs (see [`leases`]).
    ///
    /// # Errors
    /// As [`Store::open`]; [`StateError::BadOwner`] for an id that is not letters, digits,
    /// `-`, `_` and `.`; [`StateError::OwnerTaken`] when a gateway running on this home has
    /// the same id.
    pub fn open_as(home: &Home, owner: &str) -> Result<Self, StateError> {
        Self::open_at(home, &Location::Embedded, Some(owner))
    }

    /// Opens the store at `location` — the home's embedded store, or a PostgreSQL database
    /// (connected, its schema migrated under a lock) — for the gateway `owner`, or for a
    /// command (`None`: a new id, taken lazily).
    ///
    /// # Errors
    /// As [`Store::open_as`]; the database unreachable or refusing.
    pub fn open_at(
        home: &Home,
        location: &Location,
        owner: Option<&str>,
    ) -> Result<Self, StateError> {
        if let Some(owner) = owner
            && !leases::safe_id(owner)
        {
            return Err(StateError::BadOwner(owner.to_string()));
        }
        let id = owner.map_or_else(default_owner_id, str::to_string);
        let dir = home.join(lurkbot_core::layout::STATE);
        let deferred = Arc::new(deferred::Deferred::new(&dir, &id));
        let store = match location {
            Location::Embedded => {
                let conn = embedded::open(home)?;
                Self {
                    backend: Arc::new(Backend::Embedded(Mutex::new(conn))),
                    owner: Arc::new(leases::Owner::files(id, &dir)),
                    deferred,
                }
            }
            Location::Postgres(url) => Self {
                backend: Arc::new(Backend::Postgres(Box::new(postgres::Pg::connect(
                    url,
                    &id,
                    user_of(home).as_deref(),
                )?))),
                owner: Arc::new(leases::Owner::session(id)),
                deferred,
            },
        };
        if owner.is_some() {
            store.owner.hold()?;
        }
        Ok(store)
    }

    /// This store, not kept open by the reference ([`WeakStore`]).
    pub fn downgrade(&self) -> WeakStore {
        WeakStore {
            backend: Arc::downgrade(&self.backend),
            owner: Arc::downgrade(&self.owner),
            deferred: Arc::downgrade(&self.deferred),
        }
    }

    /// Which backend holds this store: `embedded` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match &*self.backend {
            Backend::Embedded(_) => "embedded",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Where this store is, without a password: the home's file, or the database's URL.
    pub fn describe(&self, home: &Home) -> String {
        match &*self.backend {
            Backend::Embedded(_) => home.join(STATE_FILE).display().to_string(),
            Backend::Postgres(pg) => pg.target().to_string(),
        }
    }

    /// The schema version of the store (`state status`).
    ///
    /// # Errors
    /// The database failing.
    pub fn schema_version(&self) -> Result<i64, StateError> {
        match &*self.backend {
            Backend::Embedded(conn) => embedded::version(&lock(conn)),
            Backend::Postgres(pg) => pg.schema_version(),
        }
    }

    /// Whether the store answers with a schema this build can use (`/ready`).
    ///
    /// # Errors
    /// The database failing, or its schema moved past this build's.
    pub fn ready(&self) -> Result<(), StateError> {
        match &*self.backend {
            Backend::Embedded(conn) => embedded::check(&lock(conn)),
            Backend::Postgres(pg) => pg.check(),
        }
    }

    /// Runs `f` with statements committed one by one, without waiting for the disk (the
    /// embedded store's WAL commits them without a sync; PostgreSQL's sessions run with
    /// `synchronous_commit` off): what a killed process leaves, never what a power cut may.
    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        match &*self.backend {
            Backend::Embedded(conn) => f(&mut Lite(&lock(conn))),
            Backend::Postgres(pg) => pg.run(f),
        }
    }

    /// Runs `f` in one transaction that no other writer interleaves with, committed durably
    /// (a record a source is acknowledged on survives a power cut too).
    fn durably<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        self.transaction(true, f)
    }

    /// Runs `f` in one transaction no other writer interleaves with, not waiting for the disk
    /// on the embedded store (leases: a power cut ends their holder too).
    fn exclusively<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        self.transaction(false, f)
    }

    /// One transaction under the store's write lock; `synced`: committed with
    /// `synchronous = FULL` on the embedded store, with `synchronous_commit` on in PostgreSQL.
    fn transaction<T: Send + 'static>(
        &self,
        synced: bool,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        match &*self.backend {
            Backend::Embedded(conn) if synced => embedded::durably(&mut lock(conn), f),
            Backend::Embedded(conn) => embedded::exclusively(&mut lock(conn), f),
            Backend::Postgres(pg) => pg.transaction(synced, true, f),
        }
    }
}

/// The user whose home `home` is, on a shared gateway (`users/<name>`); `None` for the
/// gateway's own home.
fn user_of(home: &Home) -> Option<String> {
    home.shared()?;
    Some(home.root().file_name()?.to_string_lossy().into_owned())
}

/// The embedded connection (a poisoned lock still holds a usable connection: SQLite rolls back
/// whatever the panicking holder left open).
fn lock(conn: &Mutex<rusqlite::Connection>) -> std::sync::MutexGuard<'_, rusqlite::Connection> {
    match conn.lock() {
        Ok(c) => c,
        Err(poisoned) => poisoned.into_inner(),
    }
}
