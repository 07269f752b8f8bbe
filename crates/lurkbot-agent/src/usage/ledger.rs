//! The day's and month's totals the budgets are checked against, per agent and in all. One
//! ledger per home and process reads the month's usage file once and then only what was
//! appended since (by this process or another: the CLI and the gateway share the file), so a
//! check before a call costs a `stat` and a short read.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use chrono::NaiveDate;
use lurkbot_core::{Home, Zone};

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

    /// (today's, this month's) totals at `now_ms` in `zone`, for `agent` (or `session:<key>`
    /// for one session) or (`None`) all; what calls in flight hold is included.
    pub fn totals(&self, zone: &Zone, now_ms: u64, agent: Option<&str>) -> (Totals, Totals) {
        let Ok(mut state) = self.state.lock() else {
            return (Totals::default(), Totals::default());
        };
        Self::refresh(&self.home, &mut state, zone, now_ms);
        Self::of_state(&state, zone, now_ms, agent)
    }

    /// Checks a call with `allowed` (given the totals, holds included) and, when it passes,
    /// holds `amount` for `agent` until the returned [`Held`] is dropped — both under one lock,
    /// so calls made at once cannot all pass a cap that only one of them fits under
    /// (ARCHITECTURE.md §5.1, §7c).
    ///
    /// # Errors
    /// What `allowed` says; nothing is held then.
    pub fn reserve<E>(
        self: &Arc<Self>,
        zone: &Zone,
        now_ms: u64,
        agent: &str,
        amount: Totals,
        allowed: impl FnOnce(&dyn Fn(Option<&str>) -> (Totals, Totals)) -> Result<(), E>,
    ) -> Result<Held, E> {
        let Ok(mut state) = self.state.lock() else {
            allowed(&|_| (Totals::default(), Totals::default()))?;
            return Ok(Held {
                ledger: self.clone(),
                agent: agent.to_string(),
                amount: Totals::default(),
            });
        };
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
        })
    }

    /// Reads what was appended to this month's file since the last look.
    fn refresh(home: &Home, state: &mut State, zone: &Zone, now_ms: u64) {
        let today = local_date(zone, now_ms);
        let file = month_file(home, today);
        if state.file != file {
            let held = std::mem::take(&mut state.held);
            *state = State {
                file: file.clone(),
                held,
                ..State::default()
            };
        }
        let fresh = read_from(&file, state.offset);
        state.offset += fresh.consumed;
        for record in fresh.records {
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

/// What one call in flight holds in its [`Ledger`]: released when dropped — after the call's
/// record was written and read back (see `Meter::record`), or when the call failed.
pub struct Held {
    ledger: Arc<Ledger>,
    agent: String,
    amount: Totals,
}

impl Drop for Held {
    fn drop(&mut self) {
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
