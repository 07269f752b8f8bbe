//! LurkBot's durable state behind one seam (ARCHITECTURE.md §10): what must survive a crash,
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
//! The first backend is the embedded store: `state/state.sqlite` in the home (SQLite, WAL).
//! Callers see [`Store`] only, so another backend can stand behind the same calls.

mod embedded;
mod error;
pub mod inbound;
pub mod outbox;
pub mod turns;

pub use embedded::STATE_FILE;
pub use error::StateError;
pub use inbound::Received;
pub use outbox::{NewOutgoing, Outgoing, OutgoingState};
pub use turns::{Admitted, NewTurn, TurnRecord, TurnState};

use std::sync::{Arc, Mutex};

use lurkbot_core::Home;

/// The durable state of one home. Cheap to clone (one shared connection).
#[derive(Clone)]
pub struct Store {
    db: Arc<Mutex<rusqlite::Connection>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store(embedded)")
    }
}

impl Store {
    /// Opens (creating) the embedded store of `home`: `state/state.sqlite`, private, in WAL
    /// mode, its schema brought up to date.
    ///
    /// # Errors
    /// The folder or the database cannot be opened, or its schema is newer than this build.
    pub fn open(home: &Home) -> Result<Self, StateError> {
        let conn = embedded::open(home)?;
        Ok(Self {
            db: Arc::new(Mutex::new(conn)),
        })
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
