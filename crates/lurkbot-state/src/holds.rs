//! Budget holds: what model calls in flight hold against the budgets, in the store every
//! gateway on it shares (ARCHITECTURE.md §6.3, §7c). A call's estimate is held from the check
//! that lets it go until its usage is recorded; the check sums the holds of every live holder
//! and records the new hold in one transaction under the store's write lock, so calls made at
//! once on several gateways cannot all pass a cap only one of them fits under.
//!
//! A hold belongs to a gateway (its owner id and incarnation, as a lease does): the holds of a
//! gateway that died are not counted and are removed by the next check. A hold also lapses
//! after [`HOLD_TTL_MS`] (longer than any model call may take), for a host that vanished.

use crate::leases::{Owner, Seen};
use crate::sql::{Sql, vals};
use crate::{StateError, Store, UsageRow};

/// How long a hold lasts at most: a call still unrecorded by then is not counted.
pub const HOLD_TTL_MS: u64 = 30 * 60 * 1000;

/// Tokens and micro-dollars held by calls in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Estimated tokens.
    pub tokens: u64,
    /// Estimated cost, in millionths of a dollar.
    pub micro_usd: u64,
}

/// What live holders hold: for every agent together, and for the agent asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldSums {
    /// Every agent's calls.
    pub all: Held,
    /// The agent's own calls.
    pub agent: Held,
}

impl Store {
    /// Sums what live holders hold, reads the usage records after `usage_after` (`(seq,
    /// since_ms)`, as [`Store::usage_after`]; `None`: none), asks `allowed` whether a call of
    /// `amount` for `agent` may go, and when it may records its hold — one transaction under the
    /// write lock, so the records and the holds are seen as one moment. The hold's id (for
    /// [`Store::release_budget`]), or what `allowed` said.
    ///
    /// # Errors
    /// Store failures (then nothing is held).
    pub fn hold_budget<E: Send + 'static>(
        &self,
        agent: &str,
        amount: Held,
        usage_after: Option<(i64, u64)>,
        allowed: impl FnOnce(HeldSums, Vec<UsageRow>) -> Result<(), E> + Send + 'static,
    ) -> Result<Result<String, E>, StateError> {
        let (owner, agent) = (self.owner.clone(), agent.to_string());
        // A hold lasts one call: it need not wait for the disk (a crash ends its holder too).
        self.exclusively(move |tx| {
            let sums = live_sums(tx, &owner, &agent)?;
            let records = match usage_after {
                Some((seq, since)) => crate::usage::rows_after(tx, seq, since)?,
                None => Vec::new(),
            };
            if let Err(refused) = allowed(sums, records) {
                return Ok(Err(refused));
            }
            insert(tx, &owner, &agent, amount).map(Ok)
        })
    }

    /// Ends hold `id` (its call's usage is recorded, or the call failed).
    ///
    /// # Errors
    /// Store failures.
    pub fn release_budget(&self, id: &str) -> Result<(), StateError> {
        let id = id.to_string();
        self.read(move |sql| {
            sql.exec("DELETE FROM holds WHERE id = ?1", vals![id])?;
            Ok(())
        })
    }

    /// What live holders hold now, for every agent and for `agent` (`state status`, tests).
    ///
    /// # Errors
    /// Store failures.
    pub fn held_budget(&self, agent: &str) -> Result<HeldSums, StateError> {
        let (owner, agent) = (self.owner.clone(), agent.to_string());
        self.exclusively(move |tx| live_sums(tx, &owner, &agent))
    }
}

/// Records `agent`'s hold of `amount` for `owner`; its id.
pub(crate) fn insert(
    tx: &mut dyn Sql,
    owner: &Owner,
    agent: &str,
    amount: Held,
) -> Result<String, StateError> {
    owner.hold()?;
    let id = lurkbot_core::random_hex(12);
    let expires = now().saturating_add(HOLD_TTL_MS as i64);
    tx.exec(
        "INSERT INTO holds (id, owner, incarnation, agent, tokens, micro_usd, expires_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        vals![
            &id,
            owner.id(),
            owner.incarnation(),
            agent,
            clamp(amount.tokens),
            clamp(amount.micro_usd),
            expires
        ],
    )?;
    Ok(id)
}

/// The sums of the live holds; the holds of dead holders, and lapsed ones, are removed.
pub(crate) fn live_sums(
    tx: &mut dyn Sql,
    owner: &Owner,
    agent: &str,
) -> Result<HeldSums, StateError> {
    let rows = tx.rows(
        "SELECT id, owner, incarnation, agent, tokens, micro_usd, expires_ms FROM holds",
        &[],
    )?;
    let now = now();
    let mut seen = Seen::new();
    let mut sums = HeldSums::default();
    for row in rows {
        let (holder, incarnation, expires) = (row.text(1), row.text(2), row.int(6));
        let alive = expires >= now
            && (owner.is_me(&holder, &incarnation) || {
                let key = (holder, incarnation);
                match seen.get(&key) {
                    Some(alive) => *alive,
                    None => {
                        let alive = owner.alive(tx, &key.0, &key.1, i64::MAX)?;
                        seen.insert(key, alive);
                        alive
                    }
                }
            });
        if !alive {
            tx.exec("DELETE FROM holds WHERE id = ?1", vals![row.text(0)])?;
            continue;
        }
        let held = Held {
            tokens: row.int(4).max(0) as u64,
            micro_usd: row.int(5).max(0) as u64,
        };
        add(&mut sums.all, held);
        if row.text(3) == agent {
            add(&mut sums.agent, held);
        }
    }
    Ok(sums)
}

pub(crate) fn add(sum: &mut Held, held: Held) {
    sum.tokens = sum.tokens.saturating_add(held.tokens);
    sum.micro_usd = sum.micro_usd.saturating_add(held.micro_usd);
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn now() -> i64 {
    i64::try_from(lurkbot_core::now_ms()).unwrap_or(i64::MAX)
}
