//! Web UI sign-ins in the store (ARCHITECTURE.md §6.2, §6.3): on PostgreSQL a sign-in made on
//! one gateway — its cookie's SHA-256, its user and expiry — is known to every gateway, and one
//! ended on any of them ends everywhere (each gateway drops what the store no longer holds).

use crate::sql::vals;
use crate::{StateError, Store};

/// One sign-in: its cookie's digest, its user, when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSignIn {
    /// The cookie's SHA-256 (hex).
    pub digest: String,
    /// The user signed in.
    pub user: String,
    /// When it ends, ms since the epoch.
    pub expires_ms: u64,
}

impl Store {
    /// Records a sign-in (and forgets the expired ones).
    ///
    /// # Errors
    /// Store failures.
    pub fn record_sign_in(&self, sign_in: &StoredSignIn) -> Result<(), StateError> {
        let s = sign_in.clone();
        self.read(move |sql| {
            sql.exec("DELETE FROM sign_ins WHERE expires_ms <= ?1", vals![now()])?;
            sql.exec(
                "INSERT INTO sign_ins (digest, username, expires_ms) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (digest) DO UPDATE SET username = excluded.username, \
                 expires_ms = excluded.expires_ms",
                vals![s.digest, s.user, clamp(s.expires_ms)],
            )?;
            Ok(())
        })
    }

    /// The sign-in of the cookie whose digest is `digest`, while it has not expired.
    ///
    /// # Errors
    /// Store failures.
    pub fn sign_in_of(&self, digest: &str) -> Result<Option<StoredSignIn>, StateError> {
        let digest = digest.to_string();
        self.read(move |sql| {
            let row = sql.row(
                "SELECT username, expires_ms FROM sign_ins WHERE digest = ?1 AND expires_ms > ?2",
                vals![&digest, now()],
            )?;
            Ok(row.map(|r| StoredSignIn {
                digest,
                user: r.text(0),
                expires_ms: r.ms(1),
            }))
        })
    }

    /// Ends the sign-in whose cookie's digest is `digest`.
    ///
    /// # Errors
    /// Store failures.
    pub fn end_sign_in(&self, digest: &str) -> Result<(), StateError> {
        let digest = digest.to_string();
        self.read(move |sql| {
            sql.exec("DELETE FROM sign_ins WHERE digest = ?1", vals![digest])?;
            Ok(())
        })
    }

    /// Ends every sign-in of `user` (a removed user, a new password).
    ///
    /// # Errors
    /// Store failures.
    pub fn end_sign_ins_of(&self, user: &str) -> Result<(), StateError> {
        let user = user.to_string();
        self.read(move |sql| {
            sql.exec("DELETE FROM sign_ins WHERE username = ?1", vals![user])?;
            Ok(())
        })
    }

    /// The digests of the sign-ins that have not ended or expired.
    ///
    /// # Errors
    /// Store failures.
    pub fn live_sign_ins(&self) -> Result<Vec<String>, StateError> {
        self.read(|sql| {
            let rows = sql.rows(
                "SELECT digest FROM sign_ins WHERE expires_ms > ?1",
                vals![now()],
            )?;
            Ok(rows.into_iter().map(|r| r.text(0)).collect())
        })
    }
}

fn clamp(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn now() -> i64 {
    clamp(lurkbot_core::now_ms())
}
