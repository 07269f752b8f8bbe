//! Leases: which gateway holds a piece of work (ARCHITECTURE.md §6.3). A lease is a row — a
//! name such as `turn:<run id>`, its owner (a gateway's id) and an expiry — that its owner
//! renews every [`LEASE_RENEW_MS`]. Another gateway takes it only once it is free.
//!
//! On the embedded store every gateway shares one machine, so whether an owner is alive is
//! known exactly: each owner holds an exclusive lock on `state/owners/<id>.lock` while its
//! store is open (the kernel drops it when the process dies, even by SIGKILL). A lease is free
//! when nobody holds it or its owner's lock is free — at once after a crash, never while its
//! owner lives, however late a renewal is. The expiry matters where liveness cannot be seen
//! (another host); it is kept and renewed here all the same, so `state status` reads the same
//! on every backend.
//!
//! On PostgreSQL gateways run on several machines. Each holds a session-level advisory lock
//! keyed by its id on its connection while it runs; PostgreSQL drops it when the connection
//! ends (the process died, or its connection was lost). A lease is free there when its
//! holder's lock is gone **or** its expiry passed (a host that vanished without closing its
//! connection, a gateway that stopped renewing): taken over within [`LEASE_TTL_MS`] plus one
//! renewal.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::sql::{Sql, vals};
use crate::{StateError, Store};

/// How long a lease lasts without a renewal.
pub const LEASE_TTL_MS: u64 = 10_000;
/// How often an owner renews its leases.
pub const LEASE_RENEW_MS: u64 = 2_000;

/// Who holds leases in this store: a gateway's id and how its liveness is seen.
pub(crate) struct Owner {
    id: String,
    /// This opening of the store: a gateway restarted under the same id is another
    /// incarnation, and the leases of the one before it (dead: this one holds the id's lock)
    /// are free. The stores one gateway has open at once (its own home's and its users')
    /// are one incarnation ([`incarnation_of`]).
    incarnation: Arc<str>,
    liveness: Liveness,
}

/// How the liveness of a lease's holder is seen.
enum Liveness {
    /// The embedded store: lock files in `state/owners/`.
    Files {
        dir: PathBuf,
        /// Taken when a gateway opens the store (else at the first lease), held until the
        /// store is dropped.
        lock: Mutex<Option<File>>,
    },
    /// PostgreSQL: the holder's advisory lock on its session (taken by the backend when it
    /// connects), and the lease's expiry.
    Session,
}

impl Owner {
    /// An owner on the embedded store of the home whose `state/` is `state_dir`.
    pub(crate) fn files(id: String, state_dir: &Path) -> Self {
        Self {
            incarnation: incarnation_of(&id),
            id,
            liveness: Liveness::Files {
                dir: state_dir.join("owners"),
                lock: Mutex::new(None),
            },
        }
    }

    /// An owner on PostgreSQL (its connection holds its session lock).
    pub(crate) fn session(id: String) -> Self {
        Self {
            incarnation: incarnation_of(&id),
            id,
            liveness: Liveness::Session,
        }
    }

    /// The gateway id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    fn lock_path(dir: &Path, id: &str) -> PathBuf {
        dir.join(format!("{id}.lock"))
    }

    /// Takes the liveness lock if this owner does not hold it yet (on PostgreSQL its
    /// connection took it).
    pub(crate) fn hold(&self) -> Result<(), StateError> {
        let Liveness::Files { dir, lock } = &self.liveness else {
            return Ok(());
        };
        let mut held = match lock.lock() {
            Ok(held) => held,
            Err(poisoned) => poisoned.into_inner(),
        };
        if held.is_some() {
            return Ok(());
        }
        lurkbot_core::create_private_dir(dir)?;
        let path = Self::lock_path(dir, &self.id);
        let io = |e| StateError::from(lurkbot_core::CoreError::io("lock", &path, e));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        file.try_lock().map_err(|e| match e {
            std::fs::TryLockError::WouldBlock => StateError::OwnerTaken(self.id.clone()),
            std::fs::TryLockError::Error(e) => io(e),
        })?;
        *held = Some(file);
        Ok(())
    }

    /// Whether the holder `other` of a lease, in its `incarnation`, with the lease's expiry,
    /// still runs.
    pub(crate) fn alive(
        &self,
        sql: &mut dyn Sql,
        other: &str,
        incarnation: &str,
        expires_ms: i64,
    ) -> Result<bool, StateError> {
        if other == self.id {
            // This id is held by this store: an older incarnation of it is gone.
            self.hold()?;
            return Ok(incarnation == &*self.incarnation);
        }
        let dir = match &self.liveness {
            Liveness::Session => {
                return Ok(expires_ms >= now() && sql.owner_session_alive(other)?);
            }
            Liveness::Files { dir, .. } => dir,
        };
        if !safe_id(other) {
            return Ok(false);
        }
        let path = Self::lock_path(dir, other);
        let Ok(file) = File::options().write(true).open(&path) else {
            return Ok(false);
        };
        Ok(match file.try_lock() {
            Ok(()) => {
                // Dead: its file goes (still under our lock, so no live owner loses it).
                let _ = std::fs::remove_file(&path);
                false
            }
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => false,
        })
    }

    /// The other gateways running on this state now: their ids on the embedded store (each
    /// holds its lock file), or how many other connections hold a gateway's lock on
    /// PostgreSQL (where a lock carries no name).
    fn others_running(&self, sql: &mut dyn Sql) -> Result<Vec<String>, StateError> {
        match &self.liveness {
            Liveness::Session => {
                let row = sql.row(
                    "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
                     AND objsubid = 1 AND pid <> pg_backend_pid() \
                     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    &[],
                )?;
                let n = row.map_or(0, |r| r.int(0));
                Ok(if n > 0 {
                    vec![format!("{n} other connection(s) to the database")]
                } else {
                    Vec::new()
                })
            }
            Liveness::Files { dir, .. } => {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    return Ok(Vec::new());
                };
                let mut running = Vec::new();
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let Some(id) = name.strip_suffix(".lock") else {
                        continue;
                    };
                    if id != self.id && self.alive(sql, id, "", i64::MAX)? {
                        running.push(id.to_string());
                    }
                }
                running.sort();
                Ok(running)
            }
        }
    }

    /// This opening's incarnation.
    pub(crate) fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// Whether a lease held by `holder` in `incarnation` is this store's own.
    pub(crate) fn is_me(&self, holder: &str, incarnation: &str) -> bool {
        holder == self.id && incarnation == &*self.incarnation
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let Liveness::Files { dir, lock } = &mut self.liveness else {
            return;
        };
        let held = match lock.get_mut() {
            Ok(held) => held.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if held.is_some() {
            let _ = std::fs::remove_file(Self::lock_path(dir, &self.id));
        }
    }
}

/// The incarnation of gateway `id` in this process: the one its stores open now share, so
/// that the holds one of its users' stores reads in another's schema are seen as its own
/// (`together.rs`); a new one once none is open.
fn incarnation_of(id: &str) -> Arc<str> {
    static OPEN: Mutex<Vec<(String, Weak<str>)>> = Mutex::new(Vec::new());
    let mut open = match OPEN.lock() {
        Ok(open) => open,
        Err(poisoned) => poisoned.into_inner(),
    };
    open.retain(|(_, weak)| weak.strong_count() > 0);
    if let Some(live) = open
        .iter()
        .find(|(held, _)| held == id)
        .and_then(|(_, weak)| weak.upgrade())
    {
        return live;
    }
    let fresh: Arc<str> = Arc::from(lurkbot_core::random_hex(8));
    open.push((id.to_string(), Arc::downgrade(&fresh)));
    fresh
}

/// Whether `id` can name a lock file ([`lurkbot_core::valid_gateway_id`]).
pub(crate) fn safe_id(id: &str) -> bool {
    lurkbot_core::valid_gateway_id(id)
}

/// A gateway id for this machine: its host name and a random suffix.
pub fn default_owner_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| {
            h.trim()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "gateway".to_string());
    format!("{host}-{}", lurkbot_core::random_hex(3))
}

/// One lease as `state status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// What it holds (`turn:<run id>`).
    pub name: String,
    /// The gateway holding it.
    pub owner: String,
    /// When it expires without a renewal (ms since the epoch).
    pub expires_ms: u64,
    /// Whether its gateway still runs (its lock is held): a gone one's leases are free.
    pub alive: bool,
}

fn now() -> i64 {
    i64::try_from(lurkbot_core::now_ms()).unwrap_or(i64::MAX)
}

fn expiry() -> i64 {
    now().saturating_add(LEASE_TTL_MS as i64)
}

/// Whether each holder seen so far lives, by `(holder, incarnation)`: one look per holder
/// in a pass over many leases, so a gateway dying in the middle of the pass is seen as dead or
/// alive for all of its leases alike.
pub(crate) type Seen = std::collections::HashMap<(String, String), bool>;

/// Takes lease `name` for `owner` inside `tx` when it is free (nobody holds it, its holder is
/// dead, or it is this owner's already); whether this owner holds it now.
pub(crate) fn take(tx: &mut dyn Sql, owner: &Owner, name: &str) -> Result<bool, StateError> {
    take_seen(tx, owner, name, &mut Seen::new())
}

/// [`take`], with what earlier takes of the same pass saw of the holders.
pub(crate) fn take_seen(
    tx: &mut dyn Sql,
    owner: &Owner,
    name: &str,
    seen: &mut Seen,
) -> Result<bool, StateError> {
    // The common case first, a lease nobody holds (a session's between its turns): one
    // statement takes it — on PostgreSQL a round trip less a turn (ARCHITECTURE.md §9).
    owner.hold()?;
    let inserted = tx.exec(
        "INSERT INTO leases (name, owner, incarnation, expires_ms) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (name) DO NOTHING",
        vals![name, &owner.id, owner.incarnation(), expiry()],
    )?;
    if inserted == 1 {
        return Ok(true);
    }
    let holder = tx.row(
        "SELECT owner, incarnation, expires_ms FROM leases WHERE name = ?1",
        vals![name],
    )?;
    if let Some(row) = holder {
        let (holder, incarnation) = (row.text(0), row.text(1));
        if !owner.is_me(&holder, &incarnation) {
            let key = (holder, incarnation);
            let alive = match seen.get(&key) {
                Some(alive) => *alive,
                None => {
                    let alive = owner.alive(tx, &key.0, &key.1, row.int(2))?;
                    seen.insert(key, alive);
                    alive
                }
            };
            if alive {
                return Ok(false);
            }
        }
    }
    tx.exec(
        "INSERT INTO leases (name, owner, incarnation, expires_ms) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, \
         incarnation = excluded.incarnation, expires_ms = excluded.expires_ms",
        vals![name, &owner.id, owner.incarnation(), expiry()],
    )?;
    Ok(true)
}

/// Gives back lease `name` if `owner` holds it.
pub(crate) fn give_back(tx: &mut dyn Sql, owner: &Owner, name: &str) -> Result<(), StateError> {
    tx.exec(
        "DELETE FROM leases WHERE name = ?1 AND owner = ?2 AND incarnation = ?3",
        vals![name, &owner.id, owner.incarnation()],
    )?;
    Ok(())
}

impl Store {
    /// This store's owner id: the gateway's id its leases carry.
    pub fn owner(&self) -> &str {
        &self.owner.id
    }

    /// Renews every lease this owner holds; how many.
    ///
    /// # Errors
    /// Store failures.
    pub fn renew_leases(&self) -> Result<usize, StateError> {
        let owner = self.owner.clone();
        self.read(move |sql| {
            let n = sql.exec(
                "UPDATE leases SET expires_ms = ?3 WHERE owner = ?1 AND incarnation = ?2",
                vals![&owner.id, owner.incarnation(), expiry()],
            )?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    /// Gives back every lease this owner holds (a gateway stopping: what it leaves unended is
    /// free at once for the next start or another gateway); how many.
    ///
    /// # Errors
    /// Store failures.
    pub fn release_leases(&self) -> Result<usize, StateError> {
        let owner = self.owner.clone();
        self.read(move |sql| {
            let n = sql.exec(
                "DELETE FROM leases WHERE owner = ?1 AND incarnation = ?2",
                vals![&owner.id, owner.incarnation()],
            )?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    /// Takes lease `name` (`channel:telegram`) when it is free or this owner's already;
    /// whether this owner holds it now. Its holder keeps it until it gives it back, stops or
    /// dies (renewed with the others by [`Store::renew_leases`]).
    ///
    /// # Errors
    /// Store failures.
    pub fn take_lease(&self, name: &str) -> Result<bool, StateError> {
        let (owner, name) = (self.owner.clone(), name.to_string());
        self.exclusively(move |tx| take(tx, &owner, &name))
    }

    /// Gives back lease `name` if this owner holds it.
    ///
    /// # Errors
    /// Store failures.
    pub fn give_back_lease(&self, name: &str) -> Result<(), StateError> {
        let (owner, name) = (self.owner.clone(), name.to_string());
        self.read(move |sql| give_back(sql, &owner, &name))
    }

    /// The gateway holding lease `name`, if any (alive or not).
    ///
    /// # Errors
    /// Store failures.
    pub fn lease_holder(&self, name: &str) -> Result<Option<String>, StateError> {
        let name = name.to_string();
        self.read(move |sql| {
            let row = sql.row("SELECT owner FROM leases WHERE name = ?1", vals![name])?;
            Ok(row.map(|r| r.text(0)))
        })
    }

    /// The other gateways running on this state now (see `state migrate`, which needs none).
    ///
    /// # Errors
    /// Store failures.
    pub fn others_running(&self) -> Result<Vec<String>, StateError> {
        let owner = self.owner.clone();
        self.read(move |sql| owner.others_running(sql))
    }

    /// Every lease held now, by name.
    ///
    /// # Errors
    /// Store failures.
    pub fn leases(&self) -> Result<Vec<Lease>, StateError> {
        let owner = self.owner.clone();
        self.read(move |sql| {
            let rows = sql.rows(
                "SELECT name, owner, incarnation, expires_ms FROM leases ORDER BY name",
                &[],
            )?;
            let mut out = Vec::new();
            for row in rows {
                let (name, holder, incarnation, expires) =
                    (row.text(0), row.text(1), row.text(2), row.int(3));
                let alive = owner.is_me(&holder, &incarnation)
                    || (holder != owner.id && owner.alive(sql, &holder, &incarnation, expires)?);
                out.push(Lease {
                    name,
                    owner: holder,
                    expires_ms: u64::try_from(expires).unwrap_or_default(),
                    alive,
                });
            }
            Ok(out)
        })
    }
}
