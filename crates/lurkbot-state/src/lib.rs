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
//!
//! The first backend is the embedded store: `state/state.sqlite` in the home (SQLite, WAL).
//! Callers see [`Store`] only, so another backend can stand behind the same calls.

mod embedded;
mod error;
pub mod inbound;
pub mod leases;
pub mod outbox;
pub mod turns;

pub use embedded::STATE_FILE;
pub use error::StateError;
pub use inbound::Received;
pub use leases::{LEASE_RENEW_MS, LEASE_TTL_MS, Lease, default_owner_id};
pub use outbox::{NewOutgoing, Outgoing, OutgoingState};
pub use turns::{Admitted, NewTurn, TurnRecord, TurnState};

use std::sync::{Arc, Mutex};

use lurkbot_core::Home;

/// The durable state of one home. Cheap to clone (one shared connection).
#[derive(Clone)]
pub struct Store {
    db: Arc<Mutex<rusqlite::Connection>>,
    owner: Arc<leases::Owner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store(embedded)")
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
        let conn = embedded::open(home)?;
        Ok(Self::with_owner(home, conn, default_owner_id()))
    }

    fn with_owner(home: &Home, conn: rusqlite::Connection, owner: String) -> Self {
        let dir = home.join(lurkbot_core::layout::STATE);
        Self {
            db: Arc::new(Mutex::new(conn)),
            owner: Arc::new(leases::Owner::new(owner, &dir)),
        }
    }

    /// [`Store::open`] for the gateway `owner` (`[gateway] id`): the leases it takes carry
    /// it, and it says at once that it runs (see [`leases`]).
    ///
    /// # Errors
    /// As [`Store::open`]; [`StateError::BadOwner`] for an id that is not letters, digits,
    /// `-`, `_` and `.`; [`StateError::OwnerTaken`] when a gateway running on this home has
    /// the same id.
    pub fn open_as(home: &Home, owner: &str) -> Result<Self, StateError> {
        if !leases::safe_id(owner) {
            return Err(StateError::BadOwner(owner.to_string()));
        }
        let conn = embedded::open(home)?;
        let store = Self::with_owner(home, conn, owner.to_string());
        store.owner.hold()?;
        Ok(store)
    }

    /// The schema version of the store (`state status`).
    ///
    /// # Errors
    /// The database failing.
    pub fn schema_version(&self) -> Result<i64, StateError> {
        self.with(|conn| Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?))
    }

    /// Whether the store answers with a schema this build can use (`/ready`).
    ///
    /// # Errors
    /// The database failing, or its schema moved past this build's.
    pub fn ready(&self) -> Result<(), StateError> {
        self.with(|conn| embedded::check(conn))
    }

    /// Runs `f` on the connection (a poisoned lock still holds a usable connection: SQLite
    /// rolls back whatever the panicking holder left open).
    fn with<T>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        let mut conn = match self.db.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut conn)
    }
}
