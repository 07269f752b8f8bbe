//! One model call's accounting, shared by a turn's calls and compaction's summary calls (every
//! call counts, ARCHITECTURE.md §7c): the caps are checked before the call is sent, and its
//! record is written when it answers.

use lurkbot_core::{Config, Home, Zone};
use lurkbot_llm::Usage;

use super::{Caps, Held, Ledger, RunBudget, Totals, UsageRecord, append, call_usd, check_run};
use crate::error::AgentError;

/// Who is calling, for the caps and the records.
pub(crate) struct Meter<'a> {
    /// The settings (caps, prices).
    pub(crate) config: &'a Config,
    /// The zone whose days the caps count ([`super::zone`] of the settings).
    pub(crate) zone: &'a Zone,
    /// The home (the ledger and the records).
    pub(crate) home: &'a Home,
    /// The agent.
    pub(crate) agent: &'a str,
    /// The session key.
    pub(crate) session: &'a str,
    /// The run's own cap, if any.
    pub(crate) run_budget: Option<&'a RunBudget>,
}

impl Meter<'_> {
    /// Refuses a call of about `estimate` tokens to `model` that would pass a cap; `run_used`
    /// is what the run used so far. A call that may go on holds its estimate in the ledger
    /// until the returned [`Held`] is dropped (after [`Meter::record`], or when it failed), so
    /// calls made at once are checked against each other's estimates too.
    ///
    /// # Errors
    /// `BudgetExceeded` naming the cap.
    pub(crate) fn reserve(
        &self,
        model: &str,
        estimate: u64,
        run_used: u64,
    ) -> Result<Held, AgentError> {
        let held = self.reserve_checked(model, estimate, run_used);
        if let Err(AgentError::BudgetExceeded(refused)) = &held {
            // The cap's own name (`daily_tokens`), not the agent's or user's it is under (a
            // run's cap: `budget_tokens` of the heartbeat, `sessions_spawn`'s).
            let setting = refused.cap.split(' ').next().unwrap_or_default();
            let cap = setting.rsplit('.').next().unwrap_or_default();
            lurkbot_core::metrics::BUDGET_REFUSALS.inc(&[cap]);
        }
        held
    }

    fn reserve_checked(
        &self,
        model: &str,
        estimate: u64,
        run_used: u64,
    ) -> Result<Held, AgentError> {
        let now = lurkbot_core::now_ms();
        if let Some(budget) = self.run_budget {
            check_run(budget, run_used, estimate, self.zone, now)?;
        }
        let amount = Totals {
            tokens: estimate,
            usd: call_usd(self.config, model, estimate),
        };
        // A shared gateway's combined caps: checked and this call's hold taken under one lock
        // for the whole process, so users calling at once cannot pass them together.
        let combined = &self.config.users;
        let ledger = Ledger::of(self.home);
        if combined.enabled
            && combined.total_budgets.any()
            && let Some(store) = ledger.shared_store()
        {
            // On PostgreSQL: every home's records and holds, in the hold's transaction.
            let together = super::combined::in_store(self.config, self.zone, now, model, estimate);
            let caps = Caps::of(self.config, self.agent, model, estimate);
            let zone = self.zone.clone();
            let allowed = move |totals: &dyn Fn(Option<&str>) -> (Totals, Totals)| {
                caps.check(&zone, now, totals)
            };
            match ledger.reserve_in(
                &store,
                self.zone,
                now,
                self.agent,
                amount,
                allowed,
                Some(together),
            ) {
                Ok(held) => return Ok(held?),
                Err(e) => tracing::warn!(
                    error = %e,
                    "combined caps checked by this gateway alone: the state store failed"
                ),
            }
        }
        let together_lock = if combined.enabled && combined.total_budgets.any() {
            let one = super::combined::lock();
            super::combined::check(self.config, self.home, self.zone, now, model, estimate)?;
            Some(one)
        } else {
            None
        };
        let caps = Caps::of(self.config, self.agent, model, estimate);
        if caps.is_empty() && together_lock.is_none() {
            // No cap applies: nothing to check, so nothing to hold (no store transaction, no
            // records read).
            return Ok(ledger.unheld(self.agent));
        }
        let zone = self.zone.clone();
        let held = ledger.reserve(self.zone, now, self.agent, amount, move |totals| {
            caps.check(&zone, now, totals)
        })?;
        Ok(held)
    }

    /// Records an answered call (`estimate` gives input and output when the provider reported
    /// no usage).
    pub(crate) fn record(&self, model: &str, usage: Usage, estimate: impl FnOnce() -> (u64, u64)) {
        let record = UsageRecord::new(
            self.config,
            self.agent,
            self.session,
            model,
            usage,
            estimate,
        );
        count_usage(&record);
        if let Err(e) = append(self.home, self.zone, &record) {
            tracing::warn!(session = self.session, "usage record not written: {e}");
        }
    }
}

/// Counts an answered call's tokens and cost in the metrics (ARCHITECTURE.md §6.4).
fn count_usage(record: &UsageRecord) {
    use lurkbot_core::metrics::{MODEL_COST, MODEL_TOKENS};
    let (provider, model) = record.model.split_once('/').unwrap_or(("", &record.model));
    MODEL_TOKENS.add(&[provider, model, "input"], record.input_tokens as f64);
    MODEL_TOKENS.add(&[provider, model, "output"], record.output_tokens as f64);
    if let Some(usd) = record.cost_usd {
        MODEL_COST.add(&[provider, model], usd);
    }
}
