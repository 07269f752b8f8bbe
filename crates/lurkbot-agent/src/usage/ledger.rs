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
    /// for one session) or (`None`) all.
    pub fn totals(&self, zone: &Zone, now_ms: u64, agent: Option<&str>) -> (Totals, Totals) {
        let today = local_date(zone, now_ms);
        let file = month_file(&self.home, today);
        let Ok(mut state) = self.state.lock() else {
            return (Totals::default(), Totals::default());
        };
        if state.file != file {
            *state = State {
                file: file.clone(),
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
        let who = agent.unwrap_or_default().to_string();
        (
            state
                .days
                .get(&(today, who.clone()))
                .copied()
                .unwrap_or_default(),
            state.month.get(&who).copied().unwrap_or_default(),
        )
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
