//! The day's and month's totals the budgets are checked against, per agent and in all. One
//! ledger per home and process reads the month's usage file once and then only what was
//! appended since (by this process or another: the CLI and the gateway share the file), so a
//! check before a call costs a `stat` and a short read.
//!
//! What calls in flight hold is the process's own on the embedded store (one gateway runs a
//! home's turns). A gateway on PostgreSQL [shares](lurkbot_state::shared::share) its store with the ledger,
//! and the holds live there: each check sums every live gateway's holds and takes its own in
//! one transaction under the store's write lock, so calls on several gateways at once cannot
//! pass a cap together.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use chrono::{Datelike, NaiveDate};
use lurkbot_core::{Home, Zone};
use lurkbot_state::{Held as StoreHeld, HeldSums, Store, Together, UsageRow};

use super::{UsageRecord, local_date, month_file};

/// Tokens and dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Input plus output tokens.
    pub tokens: u64,
    /// Dollars of the costed records.
    pub usd: f64,
}

impl Totals {
    fn add(&mut self, record: &UsageRecord) {
        self.tokens += record.tokens();
        self.usd += record.cost_usd.unwrap_or_default();
    }
}

#[derive(Default)]
struct State {
    file: PathBuf,
    offset: u64,
    /// (day, agent) → totals; `""` is every agent.
    days: HashMap<(NaiveDate, String), Totals>,
    /// agent → the month's totals; `""` is every agent.
    month: HashMap<String, Totals>,
    /// agent → what calls in flight in this process hold (estimated, not yet recorded); `""`
    /// is every agent. Counted in today's and this month's totals.
    held: HashMap<String, Totals>,
}

/// The month's totals of one home.
pub struct Ledger {
    home: Home,
    state: Mutex<State>,
}

impl Ledger {
    /// The ledger of `home` in this process.
    pub fn of(home: &Home) -> Arc<Self> {
        static LEDGERS: Mutex<Vec<Arc<Ledger>>> = Mutex::new(Vec::new());
        let Ok(mut ledgers) = LEDGERS.lock() else {
            return Arc::new(Self::new(home));
        };
        if let Some(found) = ledgers.iter().find(|l| l.home.root() == home.root()) {
            return found.clone();
        }
        let ledger = Arc::new(Self::new(home));
        ledgers.push(ledger.clone());
        ledger
    }

    fn new(home: &Home) -> Self {
        Self {
            home: home.clone(),
            state: Mutex::new(State::default()),
        }
    }

    /// The store the home's holds and records are in, while its gateway keeps it open.
    pub(crate) fn shared_store(&self) -> Option<Store> {
        lurkbot_state::shared::of(&self.home)
    }

    /// (today's, this month's) totals at `now_ms` in `zone`, for `agent` (or `session:<key>`
    /// for one session) or (`None`) all; what calls in flight hold is included.
    pub fn totals(&self, zone: &Zone, now_ms: u64, agent: Option<&str>) -> (Totals, Totals) {
        let Ok(mut state) = self.state.lock() else {
            return (Totals::default(), Totals::default());
        };
        match self.shared_store() {
            Some(store) => Self::refresh_from(&store, &self.home, &mut state, zone, now_ms),
            None => Self::refresh(&self.home, &mut state, zone, now_ms),
        }
        Self::of_state(&state, zone, now_ms, agent)
    }

    /// Checks a call with `allowed` (given the totals, holds included) and, when it passes,
    /// holds `amount` for `agent` until the returned [`Held`] is dropped — both under one lock,
    /// so calls made at once cannot all pass a cap that only one of them fits under
    /// (ARCHITECTURE.md §5.1, §7c).
    ///
    /// # Errors
    /// What `allowed` says; nothing is held then.
    pub fn reserve<E: Send + 'static>(
        self: &Arc<Self>,
        zone: &Zone,
        now_ms: u64,
        agent: &str,
        amount: Totals,
        allowed: impl Fn(&dyn Fn(Option<&str>) -> (Totals, Totals)) -> Result<(), E>
        + Clone
        + Send
        + 'static,
    ) -> Result<Held, E> {
        let Some(store) = self.shared_store() else {
            return self.reserve_here(zone, now_ms, agent, amount, allowed);
        };
        match self.reserve_in(&store, zone, now_ms, agent, amount, allowed.clone(), None) {
            Ok(held) => held,
            Err(e) => {
                // The store failing must not let calls pass unchecked: this process's own
                // holds still count (the turn's journal fails with the store anyway).
                tracing::warn!(error = %e, "budget holds not shared: the state store failed");
                self.reserve_here(zone, now_ms, agent, amount, allowed)
            }
        }
    }

    /// [`Ledger::reserve`] in the shared `store`, with `together` (given what every home on
    /// the store spent and holds) checked in the same transaction when it is some: the
    /// combined caps of a shared gateway (ARCHITECTURE.md §6.3).
    ///
    /// # Errors
    /// The store failing (nothing is held then); inside, what `allowed` or `together` says.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reserve_in<E: Send + 'static>(
        self: &Arc<Self>,
        store: &Store,
        zone: &Zone,
        now_ms: u64,
        agent: &str,
        amount: Totals,
        allowed: impl FnOnce(&dyn Fn(Option<&str>) -> (Totals, Totals)) -> Result<(), E>
        + Send
        + 'static,
        together: Option<TogetherCheck<E>>,
    ) -> Result<Result<Held, E>, lurkbot_state::StateError> {
        let (ledger, zone_there, me) = (self.clone(), zone.clone(), agent.to_string());
        let wanted = StoreHeld {
            tokens: amount.tokens,
            micro_usd: (amount.usd * 1e6).ceil() as u64,
        };
        let cursor = Self::store_cursor(&self.home, &mut lock(&self.state), zone, now_ms);
        let own = move |held: HeldSums, rows: Vec<UsageRow>| {
            // The records and the holds of one moment: both read in this transaction.
            let mut state = lock(&ledger.state);
            Self::add_rows(&mut state, &zone_there, now_ms, rows);
            allowed(&|who| {
                let (day, month) = Self::of_state(&state, &zone_there, now_ms, who);
                let theirs = match who {
                    None => held.all,
                    Some(who) if who == me => held.agent,
                    Some(_) => StoreHeld::default(),
                };
                (plus(day, theirs), plus(month, theirs))
            })
        };
        let checked = match together {
            None => store.hold_budget(agent, wanted, Some(cursor), own),
            Some(together) => store.hold_budget_together(
                agent,
                wanted,
                Some(cursor),
                together.after,
                together.since_ms,
                move |held, rows, all| {
                    (together.check)(all)?;
                    own(held, rows)
                },
            ),
        }?;
        Ok(checked.map(|id| Held {
            ledger: self.clone(),
            agent: agent.to_string(),
            amount: Totals::default(),
            in_store: Some((store.clone(), id)),
        }))
    }

    /// What a call under no cap holds: nothing (there is nothing to check it against).
    pub(crate) fn unheld(self: &Arc<Self>, agent: &str) -> Held {
        Held {
            ledger: self.clone(),
            agent: agent.to_string(),
            amount: Totals::default(),
            in_store: None,
        }
    }

    /// [`Ledger::reserve`] with this process's own holds.
    fn reserve_here<E>(
        self: &Arc<Self>,
        zone: &Zone,
        now_ms: u64,
        agent: &str,
        amount: Totals,
        allowed: impl FnOnce(&dyn Fn(Option<&str>) -> (Totals, Totals)) -> Result<(), E>,
    ) -> Result<Held, E> {
        let mut state = lock(&self.state);
        Self::refresh(&self.home, &mut state, zone, now_ms);
        allowed(&|who| Self::of_state(&state, zone, now_ms, who))?;
        for who in [String::new(), agent.to_string()] {
            let held = state.held.entry(who).or_default();
            held.tokens += amount.tokens;
            held.usd += amount.usd;
        }
        Ok(Held {
            ledger: self.clone(),
            agent: agent.to_string(),
            amount,
            in_store: None,
        })
    }

    /// Reads what was appended to this month's file since the last look.
    fn refresh(home: &Home, state: &mut State, zone: &Zone, now_ms: u64) {
        let file = Self::begin_month(home, state, zone, now_ms);
        let fresh = read_from(&file, state.offset);
        state.offset += fresh.consumed;
        Self::add_all(state, zone, fresh.records);
    }

    /// Starts the month of `now_ms` afresh when it is not the one counted (holds kept); the
    /// month's file.
    fn begin_month(home: &Home, state: &mut State, zone: &Zone, now_ms: u64) -> PathBuf {
        let file = month_file(home, local_date(zone, now_ms));
        Self::begin_month_of(state, file.clone());
        file
    }

    /// Starts counting the month known as `file` afresh when it is not the one counted.
    fn begin_month_of(state: &mut State, file: PathBuf) {
        if state.file != file {
            let held = std::mem::take(&mut state.held);
            *state = State {
                file,
                held,
                ..State::default()
            };
        }
    }

    /// Where the shared store's records of the month of `now_ms` are read on from: (the last
    /// record counted, the earliest time the month may start at in any zone).
    fn store_cursor(home: &Home, state: &mut State, zone: &Zone, now_ms: u64) -> (i64, u64) {
        let file = month_file(home, local_date(zone, now_ms));
        Self::month_cursor(state, file, zone, now_ms)
    }

    /// [`Ledger::store_cursor`] for the month known as `month`.
    fn month_cursor(state: &mut State, month: PathBuf, zone: &Zone, now_ms: u64) -> (i64, u64) {
        Self::begin_month_of(state, month);
        let first = local_date(zone, now_ms).with_day(1).unwrap_or_default();
        let since = first
            .and_hms_opt(0, 0, 0)
            .map_or(0, |t| t.and_utc().timestamp_millis() - 14 * 3_600_000);
        (
            i64::try_from(state.offset).unwrap_or(i64::MAX),
            u64::try_from(since).unwrap_or_default(),
        )
    }

    /// Counts the shared store's `rows` not counted yet that fall in the month of `now_ms`.
    fn add_rows(state: &mut State, zone: &Zone, now_ms: u64, rows: Vec<UsageRow>) {
        let month = local_date(zone, now_ms).format("%Y-%m").to_string();
        let mut records = Vec::new();
        for row in rows {
            let Ok(seq) = u64::try_from(row.seq) else {
                continue;
            };
            if seq <= state.offset {
                continue;
            }
            state.offset = seq;
            if let Ok(record) = serde_json::from_str::<UsageRecord>(&row.record)
                && local_date(zone, record.ts).format("%Y-%m").to_string() == month
            {
                records.push(record);
            }
        }
        Self::add_all(state, zone, records);
    }

    /// Reads the shared store's records of this month not counted yet.
    fn refresh_from(store: &Store, home: &Home, state: &mut State, zone: &Zone, now_ms: u64) {
        let (after, since) = Self::store_cursor(home, state, zone, now_ms);
        match store.usage_after(after, since) {
            Ok(rows) => Self::add_rows(state, zone, now_ms, rows),
            Err(e) => tracing::warn!(error = %e, "usage records not read from the state store"),
        }
    }

    fn add_all(state: &mut State, zone: &Zone, records: Vec<UsageRecord>) {
        for record in records {
            let day = local_date(zone, record.ts);
            let session = format!("session:{}", record.session_key);
            for who in [String::new(), record.agent.clone(), session] {
                state
                    .days
                    .entry((day, who.clone()))
                    .or_default()
                    .add(&record);
                state.month.entry(who).or_default().add(&record);
            }
        }
    }

    fn of_state(state: &State, zone: &Zone, now_ms: u64, agent: Option<&str>) -> (Totals, Totals) {
        let today = local_date(zone, now_ms);
        let who = agent.unwrap_or_default().to_string();
        let held = state.held.get(&who).copied().unwrap_or_default();
        let with_held = |t: Totals| Totals {
            tokens: t.tokens + held.tokens,
            usd: t.usd + held.usd,
        };
        (
            with_held(
                state
                    .days
                    .get(&(today, who.clone()))
                    .copied()
                    .unwrap_or_default(),
            ),
            with_held(state.month.get(&who).copied().unwrap_or_default()),
        )
    }
}

/// The combined caps' part of [`Ledger::reserve_in`]: where each home's records are read on
/// from (schema → the last record counted; made at `since_ms` or later), and the check.
pub(crate) struct TogetherCheck<E> {
    pub(crate) after: HashMap<String, i64>,
    pub(crate) since_ms: u64,
    pub(crate) check: Box<dyn FnOnce(Together) -> Result<(), E> + Send>,
}

/// One home's month of usage records as read from the shared store by the combined caps
/// (not its own ledger: the home may not be open in this process).
#[derive(Default)]
pub(crate) struct Tally(State);

impl Tally {
    /// Where this home's records are read on from: (the last counted, the month's earliest
    /// start in any zone); a new month starts the count afresh.
    pub(crate) fn cursor(&mut self, zone: &Zone, now_ms: u64) -> (i64, u64) {
        let month = PathBuf::from(local_date(zone, now_ms).format("%Y-%m").to_string());
        Ledger::month_cursor(&mut self.0, month, zone, now_ms)
    }

    /// Counts `rows` not counted yet.
    pub(crate) fn add(&mut self, zone: &Zone, now_ms: u64, rows: Vec<UsageRow>) {
        Ledger::add_rows(&mut self.0, zone, now_ms, rows);
    }

    /// (today's, this month's) totals of every agent.
    pub(crate) fn totals(&self, zone: &Zone, now_ms: u64) -> (Totals, Totals) {
        Ledger::of_state(&self.0, zone, now_ms, None)
    }
}

/// What one call in flight holds in its [`Ledger`] (or in the shared store): released when
/// dropped — after the call's record was written (see `Meter::record`), or when it failed.
pub struct Held {
    ledger: Arc<Ledger>,
    agent: String,
    amount: Totals,
    /// The hold in the shared store, and its id.
    in_store: Option<(Store, String)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some((store, id)) = self.in_store.take()
            && let Err(e) = store.release_or_defer(&id)
        {
            // Kept and released once the store answers (or the hold lapses with its gateway).
            tracing::warn!(error = %e, "a budget hold not released now: released once the store answers");
        }
        if let Ok(mut state) = self.ledger.state.lock() {
            for who in [String::new(), self.agent.clone()] {
                if let Some(held) = state.held.get_mut(&who) {
                    held.tokens = held.tokens.saturating_sub(self.amount.tokens);
                    held.usd = (held.usd - self.amount.usd).max(0.0);
                }
            }
        }
    }
}

/// `totals` with what calls in flight elsewhere hold.
fn plus(totals: Totals, held: StoreHeld) -> Totals {
    Totals {
        tokens: totals.tokens + held.tokens,
        usd: totals.usd + held.micro_usd as f64 / 1e6,
    }
}

/// A ledger's lock (a poisoned one still guards consistent totals: every update is whole).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Fresh {
    records: Vec<UsageRecord>,
    consumed: u64,
}

/// The whole lines of `file` after `offset` (a line still being written is left for later).
fn read_from(file: &PathBuf, offset: u64) -> Fresh {
    let mut bytes = Vec::new();
    let read = std::fs::File::open(file).and_then(|mut f| {
        f.seek(SeekFrom::Start(offset))?;
        f.read_to_end(&mut bytes)
    });
    if read.is_err() {
        return Fresh {
            records: Vec::new(),
            consumed: 0,
        };
    }
    let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let records = String::from_utf8_lossy(&bytes[..whole])
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Fresh {
        records,
        consumed: whole as u64,
    }
}
