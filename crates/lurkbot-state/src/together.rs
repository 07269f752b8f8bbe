//! A shared gateway's combined caps on PostgreSQL (`[users.total_budgets]`, ARCHITECTURE.md
//! §6.2, §6.3): the gateway's own home keeps its state in the database's `public` schema and
//! each user's home in a schema of its own; a call checked against the combined caps reads the
//! usage records and the live budget holds of every one of them, checks, and records its own
//! hold in one transaction under one lock every such check takes — so users calling at once
//! through several gateways cannot pass the combined caps together.

use std::collections::HashMap;

use crate::holds::{self, Held, HeldSums};
use crate::sql::{Sql, vals};
use crate::{StateError, Store, UsageRow};

/// What every home on the database has spent and holds, for the combined caps.
#[derive(Debug, Clone, Default)]
pub struct Together {
    /// What live holders hold in every home (the asking home's own included).
    pub held: Held,
    /// Each home's usage records after the place asked for: (its schema, the records).
    pub homes: Vec<(String, Vec<UsageRow>)>,
}

impl Store {
    /// [`Store::hold_budget`] with the combined caps: `allowed` is also given [`Together`] —
    /// every home's records after `homes_after` (schema → the last record counted, 0 for a
    /// home not seen yet; made at `since_ms` or later) and every home's live holds — and the
    /// whole is one transaction under the combined caps' lock, taken after the store's write
    /// lock (as every such check does, so they cannot deadlock).
    ///
    /// # Errors
    /// Store failures (then nothing is held); an embedded store (its homes do not share one
    /// database: the combined caps are the gateway process's there).
    pub fn hold_budget_together<E: Send + 'static>(
        &self,
        agent: &str,
        amount: Held,
        usage_after: Option<(i64, u64)>,
        homes_after: HashMap<String, i64>,
        since_ms: u64,
        allowed: impl FnOnce(HeldSums, Vec<UsageRow>, Together) -> Result<(), E> + Send + 'static,
    ) -> Result<Result<String, E>, StateError> {
        if self.backend() != "postgres" {
            return Err(StateError::Postgres(
                "the combined caps are read from every home's schema: PostgreSQL only".into(),
            ));
        }
        let (owner, agent) = (self.owner.clone(), agent.to_string());
        self.exclusively(move |tx| {
            let lock = crate::postgres::advisory_key("total_budgets");
            tx.exec("SELECT pg_advisory_xact_lock(?1)", vals![lock])?;
            let mut together = Together::default();
            for schema in home_schemas(tx)? {
                let quoted = format!("\"{schema}\"");
                let after = homes_after.get(&schema).copied().unwrap_or_default();
                let rows = tx.rows(
                    &format!(
                        "SELECT seq, ts_ms, record FROM {quoted}.usage \
                         WHERE seq > ?1 AND ts_ms >= ?2 ORDER BY seq"
                    ),
                    vals![after, i64::try_from(since_ms).unwrap_or(i64::MAX)],
                )?;
                let rows = rows
                    .into_iter()
                    .map(|r| UsageRow {
                        seq: r.int(0),
                        ts_ms: r.ms(1),
                        record: r.text(2),
                    })
                    .collect();
                together.homes.push((schema, rows));
                let holds = tx.rows(
                    &format!(
                        "SELECT owner, incarnation, tokens, micro_usd FROM {quoted}.holds \
                         WHERE expires_ms >= ?1"
                    ),
                    vals![holds::now()],
                )?;
                for hold in holds {
                    if owner.alive(tx, &hold.text(0), &hold.text(1), i64::MAX)? {
                        let held = Held {
                            tokens: hold.int(2).max(0) as u64,
                            micro_usd: hold.int(3).max(0) as u64,
                        };
                        holds::add(&mut together.held, held);
                    }
                }
            }
            let sums = holds::live_sums(tx, &owner, &agent)?;
            let records = match usage_after {
                Some((seq, since)) => crate::usage::rows_after(tx, seq, since)?,
                None => Vec::new(),
            };
            if let Err(refused) = allowed(sums, records, together) {
                return Ok(Err(refused));
            }
            holds::insert(tx, &owner, &agent, amount).map(Ok)
        })
    }
}

/// The schemas holding a home's state: `public` (the gateway's own) and every user's.
fn home_schemas(tx: &mut dyn Sql) -> Result<Vec<String>, StateError> {
    let rows = tx.rows(
        "SELECT table_schema::text FROM information_schema.tables WHERE table_name = 'holds' \
         AND (table_schema = 'public' OR table_schema LIKE 'lurkbot\\_u\\_%' \
         OR table_schema LIKE 'lurkbot\\_user\\_%') ORDER BY 1",
        &[],
    )?;
    Ok(rows
        .into_iter()
        .map(|r| r.text(0))
        // Quoted into statements: only the names this store makes (a user's name may hold
        // `-`; the legacy ones, not yet renamed, never do).
        .filter(|s| {
            s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        })
        .collect())
}
