//! A shared gateway's combined caps (`[users.total_budgets]`, ARCHITECTURE.md §6.2): the
//! spending of the gateway's own home and of every user's home under its `users/`, together,
//! holds included. One lock for the process makes the check and the call's hold one step, as
//! [`super::Ledger::reserve`] does for one home's caps.

use std::sync::{Mutex, MutexGuard};

use lurkbot_core::{Config, Home, Zone, layout};

use super::{BudgetExceeded, Ledger, Totals, check_with};

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
    let caps = Config {
        budgets: config.users.total_budgets.clone(),
        budgets_key: Some("users.total_budgets".into()),
        models: config.models.clone(),
        ..Config::default()
    };
    check_with(&caps, zone, now_ms, "", model, estimate, &|_| (day, month))
}
