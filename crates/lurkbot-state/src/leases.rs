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

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{OptionalExtension, Transaction, params};

use crate::embedded::run;
use crate::{StateError, Store};

/// How long a lease lasts without a renewal.
pub const LEASE_TTL_MS: u64 = 10_000;
/// How often an owner renews its leases.
pub const LEASE_RENEW_MS: u64 = 2_000;

/// Who holds leases in this store: a gateway's id and its liveness lock.
pub(crate) struct Owner {
    id: String,
    /// This opening of the store: a gateway restarted under the same id is another
    /// incarnation, and the leases of the one before it (dead: this one holds the id's lock)
    /// are free.
    incarnation: String,
    dir: PathBuf,
    /// Taken when a gateway opens the store (else at the first lease), held until the store
    /// is dropped.
    lock: Mutex<Option<File>>,
}

impl Owner {
    pub(crate) fn new(id: String, state_dir: &Path) -> Self {
        Self {
            id,
            incarnation: lurkbot_core::random_hex(8),
            dir: state_dir.join("owners"),
            lock: Mutex::new(None),
        }
    }

    fn lock_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.lock"))
    }

    /// Takes the liveness lock if this owner does not hold it yet.
    pub(crate) fn hold(&self) -> Result<(), StateError> {
        let mut held = match self.lock.lock() {
            Ok(held) => held,
            Err(poisoned) => poisoned.into_inner(),
        };
        if held.is_some() {
            return Ok(());
        }
        lurkbot_core::create_private_dir(&self.dir)?;
        let path = self.lock_path(&self.id);
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

    /// Whether the holder `other` of a lease, in its `incarnation`, still runs.
    fn alive(&self, other: &str, incarnation: &str) -> Result<bool, StateError> {
        if other == self.id {
            // This id is held by this store: an older incarnation of it is gone.
            self.hold()?;
            return Ok(incarnation == self.incarnation);
        }
        if !safe_id(other) {
            return Ok(false);
        }
        let path = self.lock_path(other);
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

    /// This opening's incarnation.
    pub(crate) fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// Whether a lease held by `holder` in `incarnation` is this store's own.
    pub(crate) fn is_me(&self, holder: &str, incarnation: &str) -> bool {
        holder == self.id && incarnation == self.incarnation
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let held = match self.lock.get_mut() {
            Ok(held) => held.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if held.is_some() {
            let _ = std::fs::remove_file(self.lock_path(&self.id));
        }
    }
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

/// Takes lease `name` for `owner` inside `tx` when it is free (nobody holds it, its holder is
/// dead, or it is this owner's already); whether this owner holds it now.
pub(crate) fn take(tx: &Transaction<'_>, owner: &Owner, name: &str) -> Result<bool, StateError> {
    let holder: Option<(String, String)> = tx
        .query_row(
            "SELECT owner, incarnation FROM leases WHERE name = ?1",
            [name],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    if let Some((holder, incarnation)) = holder
        && !owner.is_me(&holder, &incarnation)
        && owner.alive(&holder, &incarnation)?
    {
        return Ok(false);
    }
    owner.hold()?;
    run(
        tx,
        "INSERT INTO leases (name, owner, incarnation, expires_ms) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, \
         incarnation = excluded.incarnation, expires_ms = excluded.expires_ms",
        params![name, owner.id, owner.incarnation, expiry()],
    )?;
    Ok(true)
}

/// Gives back lease `name` if `owner` holds it.
pub(crate) fn give_back(tx: &Transaction<'_>, owner: &Owner, name: &str) -> Result<(), StateError> {
    run(
        tx,
        "DELETE FROM leases WHERE name = ?1 AND owner = ?2 AND incarnation = ?3",
        params![name, owner.id, owner.incarnation],
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
        self.with(|conn| {
            run(
                conn,
                "UPDATE leases SET expires_ms = ?3 WHERE owner = ?1 AND incarnation = ?2",
                params![self.owner.id, self.owner.incarnation, expiry()],
            )
        })
    }

    /// Gives back every lease this owner holds (a gateway stopping: what it leaves unended is
    /// free at once for the next start or another gateway); how many.
    ///
    /// # Errors
    /// Store failures.
    pub fn release_leases(&self) -> Result<usize, StateError> {
        self.with(|conn| {
            run(
                conn,
                "DELETE FROM leases WHERE owner = ?1 AND incarnation = ?2",
                [&self.owner.id, &self.owner.incarnation],
            )
        })
    }

    /// Takes lease `name` (`channel:telegram`) when it is free or this owner's already;
    /// whether this owner holds it now. Its holder keeps it until it gives it back, stops or
    /// dies (renewed with the others by [`Store::renew_leases`]).
    ///
    /// # Errors
    /// Store failures.
    pub fn take_lease(&self, name: &str) -> Result<bool, StateError> {
        self.with(|conn| crate::embedded::durably(conn, |tx| take(tx, &self.owner, name)))
    }

    /// The gateway holding lease `name`, if any (alive or not).
    ///
    /// # Errors
    /// Store failures.
    pub fn lease_holder(&self, name: &str) -> Result<Option<String>, StateError> {
        self.with(|conn| {
            Ok(crate::embedded::query_row(
                conn,
                "SELECT owner FROM leases WHERE name = ?1",
                [name],
                |row| row.get(0),
            )
            .optional()?)
        })
    }

    /// Every lease held now, by name.
    ///
    /// # Errors
    /// Store failures.
    pub fn leases(&self) -> Result<Vec<Lease>, StateError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT name, owner, incarnation, expires_ms FROM leases ORDER BY name",
            )?;
            let rows = statement.query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, i64>(3)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (name, owner, incarnation, expires) = row?;
                let alive = self.owner.is_me(&owner, &incarnation)
                    || (owner != self.owner.id && self.owner.alive(&owner, &incarnation)?);
                out.push(Lease {
                    name,
                    owner,
                    expires_ms: u64::try_from(expires).unwrap_or_default(),
                    alive,
                });
            }
            Ok(out)
        })
    }

    pub(crate) fn lease_owner(&self) -> &Owner {
        &self.owner
    }
}
