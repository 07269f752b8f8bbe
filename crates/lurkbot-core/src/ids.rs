//! Identifiers: run ids for `terminal_exec` and session ids.

use chrono::{DateTime, Utc};

/// `n` random bytes as lower-case hex (2n characters).
///
/// Falls back to a time-and-counter mix if the OS random source fails, so an id is always produced.
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let seed = crate::now_ms() ^ COUNTER.fetch_add(1, Ordering::Relaxed).rotate_left(32);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (seed >> ((i % 8) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A run id: UTC `YYYYMMDD_HHMMSS_mmm_` followed by 10 random hex characters,
/// e.g. `20261121_101500_123_a1b2c3d4e5`. Sorts by time.
pub fn new_run_id() -> String {
    run_id_at(Utc::now())
}

fn run_id_at(t: DateTime<Utc>) -> String {
    format!("{}_{}", t.format("%Y%m%d_%H%M%S_%3f"), random_hex(5))
}

/// A session id: `ses_` followed by 12 random hex characters.
pub fn new_session_id() -> String {
    format!("ses_{}", random_hex(6))
}

/// Whether `id` can be a gateway's id (`[gateway] id`): 1 to 100 letters, digits, `-`, `_`
/// and `.`, not starting with a dot (it names a lock file in the home).
pub fn valid_gateway_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_has_the_documented_shape() {
        let t = DateTime::parse_from_rfc3339("2026-11-21T10:15:00.123Z")
            .map(|t| t.with_timezone(&Utc))
            .ok();
        let id = t.map(run_id_at).unwrap_or_default();
        assert!(id.starts_with("20261121_101500_123_"), "{id}");
        assert_eq!(id.len(), "20261121_101500_123_a1b2c3d4e5".len());
        assert!(id[20..].chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn ids_differ() {
        assert_ne!(new_run_id(), new_run_id());
        let s = new_session_id();
        assert!(s.starts_with("ses_") && s.len() == 16, "{s}");
    }
}
