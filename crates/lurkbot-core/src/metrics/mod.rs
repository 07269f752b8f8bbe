//! The process's Prometheus metrics (ARCHITECTURE.md §6.4): counters and histograms named
//! `lurkbot_*`, recorded where the work happens (a turn's end, a model call, a tool call, the
//! gate, a channel's send) and written in Prometheus' text format when `/metrics` is scraped.
//!
//! Labels are bounded by construction: callers pass names from fixed sets (a source, an
//! outcome, a tool or model named in the settings), never a session key, user text, URL path or
//! file name; and a family keeps at most [`MAX_SERIES`] series — past that, new label values
//! are counted as `other`, so a mistake cannot grow the process without bound.
//!
//! The families are statics; recording takes the family's lock for a map lookup and an add.
//! The exposition is written by hand (it is a few lines of text per series): the crates that
//! do it carry a registry, derive macros or the OpenMetrics dialect `promtool` does not take.

mod families;

pub use families::*;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// Whether families record (always, but for the bench's A/B of what recording costs a turn).
static RECORDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns recording on or off for the whole process (`lurkbot-bench observability` measures a
/// turn with and without it; nothing else turns it off).
pub fn set_recording(on: bool) {
    RECORDING.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Most series one family keeps; further label values are counted under `other`.
pub const MAX_SERIES: usize = 512;

/// Bucket bounds for durations, in seconds (a tool call of milliseconds to a turn of minutes).
pub const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// What a family counts.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Counter,
    Histogram(&'static [f64]),
}

/// One series' value.
#[derive(Debug, Clone)]
enum Value {
    Number(f64),
    Histogram {
        /// Per bucket (not cumulative); the last is `+Inf`.
        counts: Vec<u64>,
        sum: f64,
    },
}

/// A metric family: a name, its help, its label names and its series.
pub struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    series: Mutex<BTreeMap<Vec<String>, Value>>,
}

impl Family {
    /// A counter (`name` ends in `_total`).
    pub const fn counter(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
    ) -> Self {
        Self {
            name,
            help,
            kind: Kind::Counter,
            labels,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    /// A histogram over `buckets` (upper bounds, ascending).
    pub const fn histogram(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        buckets: &'static [f64],
    ) -> Self {
        Self {
            name,
            help,
            kind: Kind::Histogram(buckets),
            labels,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    /// Adds one to the counter of `values` (one per label name, in order).
    pub fn inc(&self, values: &[&str]) {
        self.add(values, 1.0);
    }

    /// Adds `amount` (not negative) to the counter of `values`.
    pub fn add(&self, values: &[&str], amount: f64) {
        if !(amount.is_finite() && amount >= 0.0) {
            return;
        }
        self.with(values, |value| {
            if let Value::Number(n) = value {
                *n += amount;
            }
        });
    }

    /// Counts `observed` in the histogram of `values`.
    pub fn observe(&self, values: &[&str], observed: f64) {
        let Kind::Histogram(bounds) = self.kind else {
            return;
        };
        if !observed.is_finite() {
            return;
        }
        let bucket = bounds
            .iter()
            .position(|b| observed <= *b)
            .unwrap_or(bounds.len());
        self.with(values, |value| {
            if let Value::Histogram { counts, sum } = value {
                if let Some(count) = counts.get_mut(bucket) {
                    *count += 1;
                }
                *sum += observed;
            }
        });
    }

    /// The value of the counter of `values` (tests, `lurkbot status`).
    pub fn get(&self, values: &[&str]) -> f64 {
        let key: Vec<String> = values.iter().map(|v| (*v).to_string()).collect();
        match lock(&self.series).get(&key) {
            Some(Value::Number(n)) => *n,
            Some(Value::Histogram { counts, .. }) => counts.iter().sum::<u64>() as f64,
            None => 0.0,
        }
    }

    /// The sum over every series of the counter (or the histogram's count).
    pub fn total(&self) -> f64 {
        lock(&self.series)
            .values()
            .map(|v| match v {
                Value::Number(n) => *n,
                Value::Histogram { counts, .. } => counts.iter().sum::<u64>() as f64,
            })
            .sum()
    }

    /// The sum over the series whose label `label` is `value` (the counter, or the
    /// histogram's count).
    pub fn sum_where(&self, label: &str, value: &str) -> f64 {
        let Some(at) = self.labels.iter().position(|l| *l == label) else {
            return 0.0;
        };
        lock(&self.series)
            .iter()
            .filter(|(values, _)| values.get(at).is_some_and(|v| v == value))
            .map(|(_, v)| match v {
                Value::Number(n) => *n,
                Value::Histogram { counts, .. } => counts.iter().sum::<u64>() as f64,
            })
            .sum()
    }

    fn with(&self, values: &[&str], change: impl FnOnce(&mut Value)) {
        if !RECORDING.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let mut series = lock(&self.series);
        let mut key: Vec<String> = (0..self.labels.len())
            .map(|i| values.get(i).copied().unwrap_or("").to_string())
            .collect();
        if !series.contains_key(&key) && series.len() >= MAX_SERIES {
            key = vec!["other".to_string(); self.labels.len()];
        }
        let value = series.entry(key).or_insert_with(|| match self.kind {
            Kind::Counter => Value::Number(0.0),
            Kind::Histogram(bounds) => Value::Histogram {
                counts: vec![0; bounds.len() + 1],
                sum: 0.0,
            },
        });
        change(value);
    }

    /// Writes the family in Prometheus' text format, each series labelled `constant` first.
    fn encode(&self, out: &mut String, constant: &[(&str, &str)]) {
        let kind = match self.kind {
            Kind::Counter => "counter",
            Kind::Histogram(_) => "histogram",
        };
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} {kind}", self.name);
        for (values, value) in lock(&self.series).iter() {
            let mut labels: Vec<(&str, &str)> = constant.to_vec();
            labels.extend(
                self.labels
                    .iter()
                    .copied()
                    .zip(values.iter().map(String::as_str)),
            );
            match (value, self.kind) {
                (Value::Number(n), _) => sample(out, self.name, "", &labels, *n),
                (Value::Histogram { counts, sum }, Kind::Histogram(bounds)) => {
                    let mut cumulative = 0;
                    for (i, count) in counts.iter().enumerate() {
                        cumulative += count;
                        let le = bounds
                            .get(i)
                            .map_or_else(|| "+Inf".to_string(), |b| b.to_string());
                        let mut with_le = labels.clone();
                        with_le.push(("le", &le));
                        sample(out, self.name, "_bucket", &with_le, cumulative as f64);
                    }
                    sample(out, self.name, "_sum", &labels, *sum);
                    sample(out, self.name, "_count", &labels, cumulative as f64);
                }
                (Value::Histogram { .. }, Kind::Counter) => {}
            }
        }
    }
}

/// A value known only when scraped (a depth, a count of connections, the process's memory).
pub struct Gauge<'a> {
    /// Its name (`lurkbot_*`).
    pub name: &'static str,
    /// Its help.
    pub help: &'static str,
    /// Its labels and value per series.
    pub series: Vec<(Vec<(&'static str, &'a str)>, f64)>,
}

/// The exposition of every family in `families`, then `gauges`, each series labelled
/// `constant` first (`gateway_id` when several gateways run).
pub fn exposition(families: &[&Family], gauges: &[Gauge<'_>], constant: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(8 * 1024);
    for family in families {
        family.encode(&mut out, constant);
    }
    for gauge in gauges {
        let _ = writeln!(out, "# HELP {} {}", gauge.name, gauge.help);
        let _ = writeln!(out, "# TYPE {} gauge", gauge.name);
        for (labels, value) in &gauge.series {
            let mut all: Vec<(&str, &str)> = constant.to_vec();
            all.extend(labels.iter().copied());
            sample(&mut out, gauge.name, "", &all, *value);
        }
    }
    out
}

/// One sample line.
fn sample(out: &mut String, name: &str, suffix: &str, labels: &[(&str, &str)], value: f64) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() {
        out.push('{');
        for (i, (key, value)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(key);
            out.push_str("=\"");
            escape_into(out, value);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    if value.fract() == 0.0 && value.abs() < 1e15 {
        let _ = write!(out, "{}", value as i64);
    } else {
        let _ = write!(out, "{value}");
    }
    out.push('\n');
}

/// A label value as the text format quotes it.
fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_histograms_are_written_in_the_text_format() {
        static CALLS: Family = Family::counter("t_calls_total", "Calls.", &["tool", "outcome"]);
        static TIME: Family = Family::histogram("t_call_seconds", "Time.", &["tool"], &[0.1, 1.0]);
        CALLS.inc(&["zip", "ok"]);
        CALLS.add(&["zip", "ok"], 2.0);
        CALLS.inc(&["say \"hi\"\\", "error"]);
        CALLS.add(&["zip", "ok"], -5.0);
        TIME.observe(&["zip"], 0.05);
        TIME.observe(&["zip"], 0.5);
        TIME.observe(&["zip"], 7.0);
        let text = exposition(&[&CALLS, &TIME], &[], &[("gateway_id", "a")]);
        let expected = "\
# HELP t_calls_total Calls.
# TYPE t_calls_total counter
t_calls_total{gateway_id=\"a\",tool=\"say \\\"hi\\\"\\\\\",outcome=\"error\"} 1
t_calls_total{gateway_id=\"a\",tool=\"zip\",outcome=\"ok\"} 3
# HELP t_call_seconds Time.
# TYPE t_call_seconds histogram
t_call_seconds_bucket{gateway_id=\"a\",tool=\"zip\",le=\"0.1\"} 1
t_call_seconds_bucket{gateway_id=\"a\",tool=\"zip\",le=\"1\"} 2
t_call_seconds_bucket{gateway_id=\"a\",tool=\"zip\",le=\"+Inf\"} 3
t_call_seconds_sum{gateway_id=\"a\",tool=\"zip\"} 7.55
t_call_seconds_count{gateway_id=\"a\",tool=\"zip\"} 3
";
        assert_eq!(text, expected);
        assert_eq!(CALLS.get(&["zip", "ok"]), 3.0);
        assert_eq!(CALLS.total(), 4.0);
        assert_eq!(CALLS.sum_where("outcome", "error"), 1.0);
        assert_eq!(CALLS.sum_where("tool", "zip"), 3.0);
        assert_eq!(CALLS.sum_where("nothing", "zip"), 0.0);
    }

    #[test]
    fn a_family_keeps_a_bounded_number_of_series() {
        static MANY: Family = Family::counter("t_many_total", "Many.", &["name"]);
        for i in 0..MAX_SERIES + 100 {
            MANY.inc(&[&format!("n{i}")]);
        }
        assert_eq!(lock(&MANY.series).len(), MAX_SERIES + 1);
        assert_eq!(MANY.get(&["other"]), 100.0);
        assert_eq!(MANY.total(), (MAX_SERIES + 100) as f64);
    }
}
