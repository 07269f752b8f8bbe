//! The outbox: every message the gateway sends on a channel is recorded before it is sent and
//! marked sent with the platform's id. A reply the platform takes in several pieces records
//! how many went out, so a restart sends only the rest. A transient failure stays pending (the
//! next start, or the retry loop, sends it again); a permanent one is kept, failed, and shown.

use crate::sql::{Row, Sql, vals};
use crate::{StateError, Store};

/// Where an outgoing message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutgoingState {
    /// Recorded, not (wholly) sent.
    Pending,
    /// Sent: the platform took every piece.
    Sent,
    /// Refused for good (the user blocked the bot, an unknown chat): kept, not retried.
    Failed,
}

impl OutgoingState {
    /// Its name in the store and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Sent => "sent",
            Self::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "pending" => Self::Pending,
            "sent" => Self::Sent,
            _ => Self::Failed,
        }
    }
}

/// A message to record before sending it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NewOutgoing {
    /// The channel (`telegram`).
    pub channel: String,
    /// The chat, room or address.
    pub chat: String,
    /// The platform message it answers.
    pub reply_to: Option<String>,
    /// `text` (a reply, a `message`, a delivery), `code` (a pairing code) or `voice` (a voice
    /// note: `body` is its file under `workspace/audio/`).
    pub kind: String,
    /// The text, or the voice note's file.
    pub body: String,
}

/// A recorded outgoing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Its id (`out_` + 16 hex): the platform's idempotency key where it has one.
    pub id: String,
    /// The turn it answers, if any.
    pub turn: Option<String>,
    /// The channel.
    pub channel: String,
    /// The chat.
    pub chat: String,
    /// The platform message it answers.
    pub reply_to: Option<String>,
    /// `text`, `code` or `voice`.
    pub kind: String,
    /// The text, or the voice note's file.
    pub body: String,
    /// Where it is.
    pub state: OutgoingState,
    /// Pieces the platform has taken so far.
    pub pieces_sent: u32,
    /// The platform's id of the last piece sent.
    pub platform_id: Option<String>,
    /// Sends tried.
    pub attempts: u32,
    /// The last failure.
    pub error: Option<String>,
    /// Recorded, ms since the epoch.
    pub created_ms: u64,
    /// Last changed.
    pub updated_ms: u64,
}

const COLUMNS: &str = "id, turn, channel, chat, reply_to, kind, body, state, pieces_sent, \
    platform_id, attempts, error, created_ms, updated_ms";

fn outgoing(row: &Row) -> Outgoing {
    Outgoing {
        id: row.text(0),
        turn: row.opt_text(1),
        channel: row.text(2),
        chat: row.text(3),
        reply_to: row.opt_text(4),
        kind: row.text(5),
        body: row.text(6),
        state: OutgoingState::parse(&row.text(7)),
        pieces_sent: row.count(8),
        platform_id: row.opt_text(9),
        attempts: row.count(10),
        error: row.opt_text(11),
        created_ms: row.ms(12),
        updated_ms: row.ms(13),
    }
}

fn by_id(sql: &mut dyn Sql, id: &str) -> Result<Option<Outgoing>, StateError> {
    let row = sql.row(
        &format!("SELECT {COLUMNS} FROM outbox WHERE id = ?1"),
        vals![id],
    )?;
    Ok(row.as_ref().map(outgoing))
}

/// Inserts one pending message inside a transaction.
pub(crate) fn insert_outgoing(
    tx: &mut dyn Sql,
    turn: Option<&str>,
    new: &NewOutgoing,
) -> Result<Outgoing, StateError> {
    let id = format!("out_{}", lurkbot_core::random_hex(8));
    tx.exec(
        "INSERT INTO outbox (id, turn, channel, chat, reply_to, kind, body, state, created_ms, \
         updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?8)",
        vals![
            &id,
            turn,
            &new.channel,
            &new.chat,
            new.reply_to.clone(),
            &new.kind,
            &new.body,
            now()
        ],
    )?;
    by_id(tx, &id)?.ok_or(StateError::NotFound {
        what: "outbox entry",
        id,
    })
}

impl Store {
    /// Records a message to send (durably: it is sent only after this returns).
    ///
    /// # Errors
    /// Store failures.
    pub fn enqueue(&self, turn: Option<&str>, new: &NewOutgoing) -> Result<Outgoing, StateError> {
        let (turn, new) = (turn.map(str::to_string), new.clone());
        self.durably(move |tx| insert_outgoing(tx, turn.as_deref(), &new))
    }

    /// One more piece of `id` was taken by the platform (its id, when it gives one).
    ///
    /// # Errors
    /// Store failures.
    pub fn piece_sent(
        &self,
        id: &str,
        pieces_sent: u32,
        platform_id: Option<&str>,
    ) -> Result<(), StateError> {
        let (id, platform_id) = (id.to_string(), platform_id.map(str::to_string));
        self.read(move |sql| {
            sql.exec(
                "UPDATE outbox SET pieces_sent = ?2, platform_id = COALESCE(?3, platform_id), \
                 updated_ms = ?4 WHERE id = ?1",
                vals![id, i64::from(pieces_sent), platform_id, now()],
            )?;
            Ok(())
        })
    }

    /// Every piece of `id` was sent.
    ///
    /// # Errors
    /// Store failures.
    pub fn mark_sent(&self, id: &str) -> Result<(), StateError> {
        self.set_outgoing_state(id, OutgoingState::Sent, None)
    }

    /// A send of `id` failed: for good (`permanent`: kept as failed) or for now (it stays
    /// pending and is tried again).
    ///
    /// # Errors
    /// Store failures.
    pub fn mark_failed(&self, id: &str, error: &str, permanent: bool) -> Result<(), StateError> {
        let state = if permanent {
            OutgoingState::Failed
        } else {
            OutgoingState::Pending
        };
        self.set_outgoing_state(id, state, Some(error))
    }

    fn set_outgoing_state(
        &self,
        id: &str,
        state: OutgoingState,
        error: Option<&str>,
    ) -> Result<(), StateError> {
        let (id, error) = (id.to_string(), error.map(str::to_string));
        self.read(move |sql| {
            let changed = sql.exec(
                "UPDATE outbox SET state = ?2, error = COALESCE(?3, error), \
                 attempts = attempts + 1, updated_ms = ?4 WHERE id = ?1",
                vals![&id, state.as_str(), error, now()],
            )?;
            if changed == 0 {
                return Err(StateError::NotFound {
                    what: "outbox entry",
                    id,
                });
            }
            Ok(())
        })
    }

    /// Puts a failed message back in line (`lurkbot outbox retry`).
    ///
    /// # Errors
    /// `NotFound` when `id` is not a failed message; store failures.
    pub fn retry_outgoing(&self, id: &str) -> Result<(), StateError> {
        let id = id.to_string();
        self.read(move |sql| {
            let changed = sql.exec(
                "UPDATE outbox SET state = 'pending', updated_ms = ?2 \
                 WHERE id = ?1 AND state = 'failed'",
                vals![&id, now()],
            )?;
            if changed == 0 {
                return Err(StateError::NotFound {
                    what: "failed outbox entry",
                    id,
                });
            }
            Ok(())
        })
    }

    /// The outgoing message `id`.
    ///
    /// # Errors
    /// Store failures.
    pub fn outgoing(&self, id: &str) -> Result<Option<Outgoing>, StateError> {
        let id = id.to_string();
        self.read(move |sql| by_id(sql, &id))
    }

    /// The message sent on `channel` whose last piece the platform numbered `platform_id` (a
    /// delivery receipt names it), if any.
    ///
    /// # Errors
    /// Store failures.
    pub fn outgoing_by_platform_id(
        &self,
        channel: &str,
        platform_id: &str,
    ) -> Result<Option<Outgoing>, StateError> {
        let (channel, platform_id) = (channel.to_string(), platform_id.to_string());
        self.read(move |sql| {
            let row = sql.row(
                &format!("SELECT {COLUMNS} FROM outbox WHERE channel = ?1 AND platform_id = ?2"),
                vals![channel, platform_id],
            )?;
            Ok(row.as_ref().map(outgoing))
        })
    }

    /// Messages in `states` (all when empty), oldest first, at most `limit`.
    ///
    /// # Errors
    /// Store failures.
    pub fn outbox(
        &self,
        states: &[OutgoingState],
        limit: usize,
    ) -> Result<Vec<Outgoing>, StateError> {
        let filter = if states.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = states.iter().map(|s| format!("'{}'", s.as_str())).collect();
            format!("WHERE state IN ({})", names.join(", "))
        };
        self.read(move |sql| {
            let query = format!(
                "SELECT {COLUMNS} FROM outbox {filter} ORDER BY created_ms, {} LIMIT ?1",
                sql.seq()
            );
            let rows = sql.rows(&query, vals![limit.min(i64::MAX as usize) as i64])?;
            Ok(rows.iter().map(outgoing).collect())
        })
    }

    /// How many messages are pending and how many failed.
    ///
    /// # Errors
    /// Store failures.
    pub fn outbox_counts(&self) -> Result<(u64, u64), StateError> {
        self.read(|sql| {
            let row = sql.row(
                "SELECT COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0), \
                 COALESCE(SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) FROM outbox",
                &[],
            )?;
            Ok(row.map_or((0, 0), |r| (r.ms(0), r.ms(1))))
        })
    }

    /// Forgets sent messages last changed before `before_ms` (failed ones stay until retried
    /// or the owner clears them); how many.
    ///
    /// # Errors
    /// Store failures.
    pub fn prune_outbox(&self, before_ms: u64) -> Result<usize, StateError> {
        self.read(move |sql| {
            let n = sql.exec(
                "DELETE FROM outbox WHERE state = 'sent' AND updated_ms < ?1",
                vals![before_ms.min(i64::MAX as u64) as i64],
            )?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }
}

fn now() -> i64 {
    lurkbot_core::now_ms() as i64
}
