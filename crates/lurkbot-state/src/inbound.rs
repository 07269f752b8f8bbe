//! Inbound records: a channel's message is recorded, with its source id, before the platform
//! is told it arrived (Telegram's offset, Matrix's `since`). Handling it — deciding who may
//! talk, fetching media, admitting its turn — happens after; a record still `received` at
//! start is handled again, and a source id recorded once is never recorded twice.

use serde_json::Value;

use crate::sql::vals;
use crate::{StateError, Store};

/// An inbound message recorded and not handled yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// Its source id (`telegram:<chat>:<message id>`).
    pub source: String,
    /// The channel.
    pub channel: String,
    /// The message as the channel gave it.
    pub payload: Value,
}

impl Store {
    /// Records an inbound message before its source is acknowledged; false when its source id
    /// was recorded before (a platform serving it again after a crash): it is not handled twice.
    ///
    /// # Errors
    /// Store failures.
    pub fn receive(
        &self,
        source: &str,
        channel: &str,
        payload: &Value,
    ) -> Result<bool, StateError> {
        let (source, channel, payload) =
            (source.to_string(), channel.to_string(), payload.to_string());
        self.durably(move |tx| {
            let added = tx.exec(
                "INSERT INTO inbound (source, channel, payload, state, created_ms, updated_ms) \
                 VALUES (?1, ?2, ?3, 'received', ?4, ?4) ON CONFLICT (source) DO NOTHING",
                vals![source, channel, payload, lurkbot_core::now_ms() as i64],
            )?;
            Ok(added == 1)
        })
    }

    /// Marks an inbound message handled without a turn (not answered, or answered with a
    /// pairing code); `note` says which.
    ///
    /// # Errors
    /// Store failures.
    pub fn handled(&self, source: &str, note: &str) -> Result<(), StateError> {
        let (source, note) = (source.to_string(), note.to_string());
        self.read(move |sql| {
            sql.exec(
                "UPDATE inbound SET state = ?2, updated_ms = ?3 WHERE source = ?1",
                vals![source, note, lurkbot_core::now_ms() as i64],
            )?;
            Ok(())
        })
    }

    /// The inbound messages of `channel` recorded and not handled, oldest first.
    ///
    /// # Errors
    /// Store failures.
    pub fn unhandled(&self, channel: &str) -> Result<Vec<Received>, StateError> {
        let channel = channel.to_string();
        self.read(move |sql| {
            let query = format!(
                "SELECT source, channel, payload FROM inbound WHERE state = 'received' \
                 AND channel = ?1 ORDER BY created_ms, {}",
                sql.seq()
            );
            sql.rows(&query, vals![channel])?
                .iter()
                .map(|row| {
                    Ok(Received {
                        source: row.text(0),
                        channel: row.text(1),
                        payload: serde_json::from_str(&row.text(2))?,
                    })
                })
                .collect()
        })
    }

    /// Forgets handled inbound records older than `before_ms`; how many.
    ///
    /// # Errors
    /// Store failures.
    pub fn prune_inbound(&self, before_ms: u64) -> Result<usize, StateError> {
        self.read(move |sql| {
            let n = sql.exec(
                "DELETE FROM inbound WHERE state != 'received' AND updated_ms < ?1",
                vals![before_ms.min(i64::MAX as u64) as i64],
            )?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }
}
