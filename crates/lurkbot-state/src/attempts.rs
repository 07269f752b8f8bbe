//! Sign-in attempts counted across gateways (ARCHITECTURE.md §6.2, §6.3): an attempt is
//! counted — against the user name and the address it names — **before** its password is
//! checked, in one transaction with the check of the counts, and forgotten only when it
//! succeeds. So however many attempts arrive at once, on however many gateways sharing the
//! store, no more than the limit are ever checked within the window.

use crate::sql::vals;
use crate::{StateError, Store};

impl Store {
    /// Counts an attempt made at `now_ms` against each of `keys` (`name:<user>`, `addr:<ip>`)
    /// unless one of them already has `max` within the `window_ms` before it: the attempt's
    /// id, or the seconds until the oldest of the blocking key's attempts leaves the window.
    ///
    /// # Errors
    /// Store failures (then nothing is counted).
    pub fn begin_attempt(
        &self,
        keys: &[String],
        max: u32,
        window_ms: u64,
        now_ms: u64,
    ) -> Result<Result<String, u64>, StateError> {
        let keys = keys.to_vec();
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        self.exclusively(move |tx| {
            let window = i64::try_from(window_ms).unwrap_or(i64::MAX);
            let since = now.saturating_sub(window);
            tx.exec("DELETE FROM attempts WHERE at_ms < ?1", vals![since])?;
            for key in &keys {
                let row = tx.row(
                    "SELECT COUNT(*), MIN(at_ms) FROM attempts WHERE key = ?1",
                    vals![key],
                )?;
                let (count, oldest) = row.map_or((0, now), |r| (r.int(0), r.int(1)));
                if count >= i64::from(max) {
                    let wait = oldest.saturating_add(window).saturating_sub(now);
                    return Ok(Err(u64::try_from(wait / 1000).unwrap_or(0).max(1)));
                }
            }
            let id = lurkbot_core::random_hex(12);
            for key in &keys {
                tx.exec(
                    "INSERT INTO attempts (id, key, at_ms) VALUES (?1, ?2, ?3)",
                    vals![&id, key, now],
                )?;
            }
            Ok(Ok(id))
        })
    }

    /// Forgets attempt `id`: its password was right.
    ///
    /// # Errors
    /// Store failures.
    pub fn attempt_succeeded(&self, id: &str) -> Result<(), StateError> {
        let id = id.to_string();
        self.read(move |sql| {
            sql.exec("DELETE FROM attempts WHERE id = ?1", vals![id])?;
            Ok(())
        })
    }
}
