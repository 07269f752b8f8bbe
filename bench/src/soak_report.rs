//! The soak benchmark's report: the RSS curve as an ASCII chart, and the bounds checked on what
//! the gateway says it retains (`status.retained`).

use serde_json::Value;

/// One RSS reading.
pub(crate) struct Sample {
    /// Seconds since the load began.
    pub(crate) secs: f64,
    /// Resident set, KiB.
    pub(crate) kib: u64,
    /// Turns finished by then.
    pub(crate) turns: usize,
}

/// The curve, `width` columns by `height` rows, MiB on the left, seconds and turns below.
pub(crate) fn chart(samples: &[Sample], width: usize, height: usize) -> String {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return "(no samples)".into();
    };
    let max = samples.iter().map(|s| s.kib).max().unwrap_or(1).max(1) as f64 / 1024.0;
    let top = (max / 4.0).ceil() * 4.0;
    let span = (last.secs - first.secs).max(1.0);
    let mut column_mib = vec![None::<f64>; width];
    for s in samples {
        let x = (((s.secs - first.secs) / span) * (width - 1) as f64).round() as usize;
        let mib = s.kib as f64 / 1024.0;
        let slot = &mut column_mib[x.min(width - 1)];
        *slot = Some(slot.map_or(mib, |m: f64| m.max(mib)));
    }
    // Columns no sample fell in carry the value before them.
    let mut before = None;
    for mib in &mut column_mib {
        match mib {
            Some(m) => before = Some(*m),
            None => *mib = before,
        }
    }
    let mut out = String::from("RSS (MiB)\n");
    for row in (0..height).rev() {
        let low = top * row as f64 / height as f64;
        let label = if row == height - 1 || row == 0 || row == height / 2 {
            format!("{:>6.1} |", top * (row + 1) as f64 / height as f64)
        } else {
            "       |".into()
        };
        out.push_str(&label);
        for mib in &column_mib {
            out.push(match mib {
                Some(m) if *m > low => '#',
                _ => ' ',
            });
        }
        out.push('\n');
    }
    out.push_str(&format!("       +{}\n", "-".repeat(width)));
    out.push_str(&format!(
        "        0 s{:>w$}\n        0 turns{:>v$}",
        format!("{:.0} s", last.secs),
        format!("{} turns", last.turns),
        w = width.saturating_sub(3),
        v = width.saturating_sub(7),
    ));
    out
}

/// What `status.retained` reports above its bound; `slots` bounds the session slots (every
/// session the run used may keep one, each without its agent once idle).
pub(crate) fn retained_over_bounds(retained: &Value, slots: usize) -> Vec<String> {
    if !retained.is_object() {
        return vec!["the gateway does not report status.retained".into()];
    }
    let bounds: [(&str, u64); 7] = [
        ("sessionSlots", slots as u64),
        (
            "agentsHeld",
            retained["agentsHeldMax"].as_u64().unwrap_or(0),
        ),
        (
            "runRecords",
            retained["runRecordsMax"].as_u64().unwrap_or(0),
        ),
        ("subagents", 0),
        ("pendingApprovals", 0),
        ("hubListeners", 1),
        ("authFailureAddresses", 0),
    ];
    bounds
        .iter()
        .filter_map(|(name, bound)| match retained[*name].as_u64() {
            None => Some(format!("status.retained.{name} is missing")),
            Some(n) if n > *bound => Some(format!(
                "status.retained.{name} is {n}, above its bound {bound}"
            )),
            Some(_) => None,
        })
        .collect()
}
