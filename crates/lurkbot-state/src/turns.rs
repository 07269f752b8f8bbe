//! The turn journal and the inbound records: a message is admitted (with its source id, once)
//! before its source is acknowledged; its turn then moves `queued → running → done | failed`,
//! recording the step it reached and the tool call in flight.

use serde_json::Value;

use crate::outbox::{NewOutgoing, Outgoing, insert_outgoing};
use crate::sql::{Row, Sql, vals};
use crate::{StateError, Store};

/// Where a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Admitted, not started (its session was busy, or the gateway stopped first).
    Queued,
    /// Started: its message may be in the transcript, and steps after it.
    Running,
    /// Answered: the reply is kept.
    Done,
    /// Ended without an answer: the error is kept.
    Failed,
}

impl TurnState {
    /// Its name in the store and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    pub(crate) fn parse(s: &str) -> Self {
        match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "done" => Self::Done,
            _ => Self::Failed,
        }
    }
}

/// A turn to admit.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTurn {
    /// Its id (the run id clients know it by).
    pub id: String,
    /// The source id of the message that starts it (`telegram:<chat>:<message id>`,
    /// `api:<Idempotency-Key>`, …): one source id never starts two turns.
    pub source: Option<String>,
    /// The session key it runs in.
    pub session: String,
    /// Where its answer goes (the caller's own shape: a channel and chat, a client, …).
    pub origin: Value,
    /// The message as the agent takes it.
    pub message: String,
    /// How it runs (its model, thinking level, …; the caller's own shape).
    pub options: Value,
}

/// A turn as the journal holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    /// Its id.
    pub id: String,
    /// Its source id, if it has one.
    pub source: Option<String>,
    /// Its session key.
    pub session: String,
    /// Where its answer goes.
    pub origin: Value,
    /// Its message.
    pub message: String,
    /// How it runs.
    pub options: Value,
    /// Where it is.
    pub state: TurnState,
    /// The transcript's length in bytes before its message was appended, once it was about
    /// to be: everything after it is this turn's.
    pub base: Option<u64>,
    /// Model steps taken.
    pub step: u32,
    /// The tool call in flight (`<call id> <tool>`), if any.
    pub tool: Option<String>,
    /// The reply, once done.
    pub reply: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// How many times it was started (a resume after a restart counts).
    pub starts: u32,
    /// Admitted, ms since the epoch.
    pub created_ms: u64,
    /// Last changed.
    pub updated_ms: u64,
}

/// What admitting a message found.
#[derive(Debug, Clone, PartialEq)]
pub enum Admitted {
    /// A new turn, queued.
    New,
    /// Its source id was admitted before: the turn it started (no second one).
    Known(Box<TurnRecord>),
}

const COLUMNS: &str = "id, source, session, origin, message, options, state, base, step, tool, \
    reply, error, starts, created_ms, updated_ms";
/// How many columns [`COLUMNS`] names.
const COLUMN_COUNT: usize = 15;

fn record(row: &Row) -> Result<TurnRecord, StateError> {
    Ok(TurnRecord {
        id: row.text(0),
        source: row.opt_text(1),
        session: row.text(2),
        origin: serde_json::from_str(&row.text(3))?,
        message: row.text(4),
        options: serde_json::from_str(&row.text(5))?,
        state: TurnState::parse(&row.text(6)),
        base: row.opt_int(7).map(|b| b.max(0) as u64),
        step: row.count(8),
        tool: row.opt_text(9),
        reply: row.opt_text(10),
        error: row.opt_text(11),
        starts: row.count(12),
        created_ms: row.ms(13),
        updated_ms: row.ms(14),
    })
}

/// The turn a query finds, if any.
fn one(sql: &mut dyn Sql, query: &str, key: &str) -> Result<Option<TurnRecord>, StateError> {
    sql.row(query, vals![key])?.as_ref().map(record).transpose()
}

/// The lease that says which gateway runs turn `id`.
fn lease_name(id: &str) -> String {
    format!("turn:{id}")
}

fn now() -> i64 {
    lurkbot_core::now_ms() as i64
}

impl Store {
    /// Admits a message: a new queued turn, leased to this store's owner, or — when its source
    /// id was admitted before — the turn it started. Committed durably: the source may be
    /// acknowledged once this returns. The inbound record of the same source id, if any, is
    /// marked handled with it.
    ///
    /// # Errors
    /// Store failures.
    pub fn admit(&self, turn: &NewTurn) -> Result<Admitted, StateError> {
        let admitted = self.admit_recorded(turn)?;
        Ok(match admitted {
            Admitted::Known(known) => Admitted::Known(Box::new(self.as_ended(*known))),
            new => new,
        })
    }

    /// `turn` as this gateway knows it: ended, when its end waits to be recorded
    /// (`deferred.rs`).
    fn as_ended(&self, mut turn: TurnRecord) -> TurnRecord {
        if matches!(turn.state, TurnState::Queued | TurnState::Running)
            && let Some((reply, error)) = self.deferred.ended(&turn.id)
        {
            turn.state = if error.is_some() {
                TurnState::Failed
            } else {
                TurnState::Done
            };
            turn.reply = reply;
            turn.error = error;
        }
        turn
    }

    fn admit_recorded(&self, turn: &NewTurn) -> Result<Admitted, StateError> {
        let turn = turn.clone();
        let owner = self.owner.clone();
        self.durably(move |tx| {
            if let Some(source) = &turn.source {
                let known = one(
                    tx,
                    &format!("SELECT {COLUMNS} FROM turns WHERE source = ?1"),
                    source,
                )?;
                if let Some(known) = known {
                    return Ok(Admitted::Known(Box::new(known)));
                }
            }
            let at = now();
            if let Some(source) = &turn.source {
                tx.exec(
                    "UPDATE inbound SET state = 'handled', updated_ms = ?2 WHERE source = ?1",
                    vals![source, at],
                )?;
            }
            tx.exec(
                "INSERT INTO turns (id, source, session, origin, message, options, state, \
                 created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7, ?7)",
                vals![
                    &turn.id,
                    turn.source.clone(),
                    &turn.session,
                    turn.origin.to_string(),
                    &turn.message,
                    turn.options.to_string(),
                    at
                ],
            )?;
            crate::leases::take(tx, &owner, &lease_name(&turn.id))?;
            Ok(Admitted::New)
        })
    }

    /// The turn `id`.
    ///
    /// # Errors
    /// Store failures.
    pub fn turn(&self, id: &str) -> Result<Option<TurnRecord>, StateError> {
        let id = id.to_string();
        let turn = self.read(move |sql| {
            one(
                sql,
                &format!("SELECT {COLUMNS} FROM turns WHERE id = ?1"),
                &id,
            )
        })?;
        Ok(turn.map(|t| self.as_ended(t)))
    }

    /// The turn a source id started.
    ///
    /// # Errors
    /// Store failures.
    pub fn turn_by_source(&self, source: &str) -> Result<Option<TurnRecord>, StateError> {
        let source = source.to_string();
        self.read(move |sql| {
            one(
                sql,
                &format!("SELECT {COLUMNS} FROM turns WHERE source = ?1"),
                &source,
            )
        })
    }

    /// Marks `id` running (once more, after a restart); how many times it was started.
    ///
    /// This and the step records do not wait for the disk (a statement on its own commits so on
    /// both backends: the embedded store's WAL without a sync, PostgreSQL with
    /// `synchronous_commit` off): a killed gateway loses none of them, only a crash of the
    /// machine holding the store may.
    ///
    /// # Errors
    /// `NotFound` for an unknown turn; store failures.
    pub fn begin(&self, id: &str) -> Result<u32, StateError> {
        let id = id.to_string();
        self.read(move |sql| {
            let started = sql.row(
                "UPDATE turns SET state = 'running', starts = starts + 1, updated_ms = ?2 \
                 WHERE id = ?1 RETURNING starts",
                vals![&id, now()],
            )?;
            let row = started.ok_or(StateError::NotFound { what: "turn", id })?;
            Ok(row.count(0))
        })
    }

    /// Records the transcript's length just before the turn's message is appended (kept from
    /// the first start: a resumed turn does not move it).
    ///
    /// # Errors
    /// Store failures.
    pub fn set_base(&self, id: &str, base: u64) -> Result<(), StateError> {
        let id = id.to_string();
        self.read(move |sql| {
            sql.exec(
                "UPDATE turns SET base = ?2, updated_ms = ?3 WHERE id = ?1 AND base IS NULL",
                vals![id, base.min(i64::MAX as u64) as i64, now()],
            )?;
            Ok(())
        })
    }

    /// Records the step a turn reached and the tool call in flight (`None` between calls).
    ///
    /// # Errors
    /// Store failures.
    pub fn set_step(&self, id: &str, step: u32, tool: Option<&str>) -> Result<(), StateError> {
        let (id, tool) = (id.to_string(), tool.map(str::to_string));
        self.read(move |sql| {
            sql.exec(
                "UPDATE turns SET step = ?2, tool = ?3, updated_ms = ?4 WHERE id = ?1",
                vals![id, i64::from(step), tool, now()],
            )?;
            Ok(())
        })
    }

    /// Ends a turn — with its reply, or the reason it failed — and records what it sends in
    /// the outbox, in one durable transaction: a crash leaves either the running turn (which
    /// is resumed) or the ended turn with its messages to send, never one without the other.
    ///
    /// # Errors
    /// Store failures.
    pub fn finish(
        &self,
        id: &str,
        outcome: Result<&str, &str>,
        outgoing: &[NewOutgoing],
    ) -> Result<Vec<Outgoing>, StateError> {
        self.end(id, outcome, outgoing, false)
    }

    /// [`Store::finish`] for a turn still open: one another gateway ended meanwhile (it resumed
    /// it) keeps that end, and nothing is sent twice (a deferred end, `deferred.rs`).
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn finish_if_open(
        &self,
        id: &str,
        outcome: Result<&str, &str>,
        outgoing: &[NewOutgoing],
    ) -> Result<Vec<Outgoing>, StateError> {
        self.end(id, outcome, outgoing, true)
    }

    /// Both ends: `only_open` leaves a turn already ended as it is, with nothing recorded.
    fn end(
        &self,
        id: &str,
        outcome: Result<&str, &str>,
        outgoing: &[NewOutgoing],
        only_open: bool,
    ) -> Result<Vec<Outgoing>, StateError> {
        let (id, outgoing, owner) = (id.to_string(), outgoing.to_vec(), self.owner.clone());
        let (state, reply, error) = match outcome {
            Ok(reply) => (TurnState::Done, Some(reply.to_string()), None),
            Err(error) => (TurnState::Failed, None, Some(error.to_string())),
        };
        let only = if only_open {
            " AND state IN ('queued', 'running')"
        } else {
            ""
        };
        self.durably(move |tx| {
            let changed = tx.exec(
                &format!(
                    "UPDATE turns SET state = ?2, reply = ?3, error = ?4, tool = NULL, \
                     updated_ms = ?5 WHERE id = ?1{only}"
                ),
                vals![&id, state.as_str(), reply, error, now()],
            )?;
            crate::leases::give_back(tx, &owner, &lease_name(&id))?;
            if changed == 0 && only_open {
                return Ok(Vec::new());
            }
            outgoing
                .iter()
                .map(|o| insert_outgoing(tx, Some(&id), o))
                .collect()
        })
    }

    /// Takes back a turn admitted but never started (its request was refused: the session was
    /// busy, the gateway stopping), so its source id may start one later. False when it had
    /// started or is unknown.
    ///
    /// # Errors
    /// Store failures.
    pub fn withdraw(&self, id: &str) -> Result<bool, StateError> {
        let (id, owner) = (id.to_string(), self.owner.clone());
        self.durably(move |tx| {
            let withdrawn = tx.exec(
                "DELETE FROM turns WHERE id = ?1 AND state = 'queued' AND starts = 0",
                vals![&id],
            )? == 1;
            if withdrawn {
                crate::leases::give_back(tx, &owner, &lease_name(&id))?;
            }
            Ok(withdrawn)
        })
    }

    /// Every turn not ended (queued or running), oldest first: what a start resumes.
    ///
    /// # Errors
    /// Store failures.
    pub fn unfinished(&self) -> Result<Vec<TurnRecord>, StateError> {
        self.read(|sql| {
            let query = format!(
                "SELECT {COLUMNS} FROM turns WHERE state IN ('queued', 'running') \
                 ORDER BY created_ms, {}",
                sql.seq()
            );
            sql.rows(&query, &[])?.iter().map(record).collect()
        })
    }

    /// Takes over every unended turn whose lease is free — nobody holds it, or its gateway
    /// is gone — and returns them, oldest first: what a start (or another gateway) resumes.
    /// Turns this owner holds are not returned: they run here already.
    ///
    /// # Errors
    /// Store failures.
    pub fn claim_unfinished(&self) -> Result<Vec<TurnRecord>, StateError> {
        let owner = self.owner.clone();
        // The gateway asks every 2 s: a read first, the write lock only when some unended
        // turn is not this gateway's own.
        let others = self.read({
            let owner = owner.clone();
            move |sql| {
                let row = sql.row(
                    "SELECT COUNT(*) FROM turns LEFT JOIN leases \
                     ON leases.name = 'turn:' || turns.id \
                     WHERE turns.state IN ('queued', 'running') AND (leases.owner IS NULL \
                     OR leases.owner != ?1 OR leases.incarnation != ?2)",
                    vals![owner.id(), owner.incarnation()],
                )?;
                Ok(row.map_or(0, |r| r.int(0)))
            }
        })?;
        if others == 0 {
            return Ok(Vec::new());
        }
        self.durably(move |tx| {
            let query = format!(
                "SELECT {COLUMNS}, leases.owner, leases.incarnation \
                 FROM turns LEFT JOIN leases ON leases.name = 'turn:' || turns.id \
                 WHERE turns.state IN ('queued', 'running') \
                 ORDER BY turns.created_ms, turns.{}",
                tx.seq()
            );
            let open = tx.rows(&query, &[])?;
            let mut claimed = Vec::new();
            let mut seen = crate::leases::Seen::new();
            for row in open {
                let holder = row.opt_text(COLUMN_COUNT);
                let incarnation = row.text(COLUMN_COUNT + 1);
                if holder
                    .as_deref()
                    .is_some_and(|h| owner.is_me(h, &incarnation))
                {
                    continue;
                }
                let turn = record(&row)?;
                if crate::leases::take_seen(tx, &owner, &lease_name(&turn.id), &mut seen)? {
                    claimed.push(turn);
                }
            }
            Ok(claimed)
        })
    }

    /// Counts turns by state: `(queued, running, done, failed)`.
    ///
    /// # Errors
    /// Store failures.
    pub fn turn_counts(&self) -> Result<[u64; 4], StateError> {
        self.read(|sql| {
            let mut counts = [0u64; 4];
            for row in sql.rows("SELECT state, COUNT(*) FROM turns GROUP BY state", &[])? {
                let slot = match TurnState::parse(&row.text(0)) {
                    TurnState::Queued => 0,
                    TurnState::Running => 1,
                    TurnState::Done => 2,
                    TurnState::Failed => 3,
                };
                counts[slot] = row.ms(1);
            }
            Ok(counts)
        })
    }

    /// Forgets ended turns last changed before `before_ms` (their replies no longer answer a
    /// retried request); how many.
    ///
    /// # Errors
    /// Store failures.
    pub fn prune_turns(&self, before_ms: u64) -> Result<usize, StateError> {
        self.read(move |sql| {
            let n = sql.exec(
                "DELETE FROM turns WHERE state IN ('done', 'failed') AND updated_ms < ?1",
                vals![before_ms.min(i64::MAX as u64) as i64],
            )?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }
}
