//! A shared gateway's combined caps (`[users.total_budgets]`, ARCHITECTURE.md §6.2): the
//! spending of the gateway's own home and of every user's home under its `users/`, together,
//! holds included. On the embedded store one lock for the process makes the check and the
//! call's hold one step, as [`super::Ledger::reserve`] does for one home's caps; on PostgreSQL
//! the check reads every home's records and holds in the database, in the transaction that
//! takes the call's hold ([`in_store`]), so gateways check against each other's calls too.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use lurkbot_core::{Config, Home, Zone, layout};

use super::ledger::{Tally, TogetherCheck};
use super::{BudgetExceeded, Ledger, Totals, check_with};

/// Each home's month of records as the combined caps last read them from the shared store,
/// by its schema.
static TALLIES: Mutex<Vec<(String, Tally)>> = Mutex::new(Vec::new());

static TOGETHER: Mutex<()> = Mutex::new(());

/// Held while a call is checked against the combined caps and its hold is taken.
pub(crate) fn lock() -> MutexGuard<'static, ()> {
    TOGETHER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every home of the shared gateway `home` belongs to: the gateway's own, then each user's.
fn homes(home: &Home) -> Vec<Home> {
    let root = home.shared().unwrap_or(home.root()).to_path_buf();
    let mut homes: Vec<Home> = Home::open(&root).into_iter().collect();
    if let Ok(entries) = std::fs::read_dir(root.join(layout::USERS)) {
        homes.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| Home::open(&e.path()).ok()),
        );
    }
    homes
}

/// Refuses a call of `estimate` tokens to `model` that would pass a combined cap.
///
/// # Errors
/// [`BudgetExceeded`] naming `users.total_budgets.<cap>`.
pub(crate) fn check(
    config: &Config,
    home: &Home,
    zone: &Zone,
    now_ms: u64,
    model: &str,
    estimate: u64,
) -> Result<(), Box<BudgetExceeded>> {
    let (mut day, mut month) = (Totals::default(), Totals::default());
    for each in homes(home) {
        let (d, m) = Ledger::of(&each).totals(zone, now_ms, None);
        day.tokens += d.tokens;
        day.usd += d.usd;
        month.tokens += m.tokens;
        month.usd += m.usd;
    }
    check_with(&caps(config), zone, now_ms, "", model, estimate, &|_| {
        (day, month)
    })
}

/// The combined caps as settings of their own (named `users.total_budgets` when refused).
fn caps(config: &Config) -> Config {
    Config {
        budgets: config.users.total_budgets.clone(),
        budgets_key: Some("users.total_budgets".into()),
        models: config.models.clone(),
        ..Config::default()
    }
}

/// [`check`] for a home whose state is in PostgreSQL: run by the store in the transaction
/// that takes the call's hold, on every home's records and live holds there.
pub(crate) fn in_store(
    config: &Config,
    zone: &Zone,
    now_ms: u64,
    model: &str,
    estimate: u64,
) -> TogetherCheck<Box<BudgetExceeded>> {
    let mut after = HashMap::new();
    let mut since_ms = Tally::default().cursor(zone, now_ms).1;
    for (schema, tally) in tallies().iter_mut() {
        let (seq, since) = tally.cursor(zone, now_ms);
        after.insert(schema.clone(), seq);
        since_ms = since;
    }
    let (caps, zone, model) = (caps(config), zone.clone(), model.to_string());
    TogetherCheck {
        after,
        since_ms,
        check: Box::new(move |together| {
            let mut tallies = tallies();
            let held = Totals {
                tokens: together.held.tokens,
                usd: together.held.micro_usd as f64 / 1e6,
            };
            let (mut day, mut month) = (held, held);
            for (schema, rows) in together.homes {
                let index = match tallies.iter().position(|(s, _)| *s == schema) {
                    Some(i) => i,
                    None => {
                        tallies.push((schema, Tally::default()));
                        tallies.len() - 1
                    }
                };
                let tally = &mut tallies[index].1;
                tally.cursor(&zone, now_ms);
                tally.add(&zone, now_ms, rows);
                let (d, m) = tally.totals(&zone, now_ms);
                day.tokens += d.tokens;
                day.usd += d.usd;
                month.tokens += m.tokens;
                month.usd += m.usd;
            }
            check_with(&caps, &zone, now_ms, "", &model, estimate, &|_| {
                (day, month)
            })
        }),
    }
}

fn tallies() -> MutexGuard<'static, Vec<(String, Tally)>> {
    TALLIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
