//! Who may talk to the gateway.
//!
//! - The token: `LURKBOT_GATEWAY_TOKEN` (environment or the home's `.env`), else
//!   `gateway.token`. `gateway.auth = "none"` drops it, but only on a loopback bind; a
//!   non-loopback bind without a token refuses to start. Compared in constant time.
//! - Failed attempts are limited per client address: after 5 failures within a minute the
//!   address is refused for a minute, whatever it sends.
//! - Browsers: a WebSocket or API request carrying an `Origin` must come from the gateway's own
//!   origin (`http://<Host>`) or one listed in `gateway.allowed_origins`; clients that send no
//!   `Origin` (SDKs, scripts) are not browsers and pass this check.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed in [`WINDOW`] before an address is blocked.
pub const MAX_FAILURES: usize = 5;
/// The counting window and the block length.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Compares secrets without an early exit.
pub fn token_matches(expected: &str, given: &str) -> bool {
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// Failed-attempt counts per client address.
#[derive(Debug, Default)]
pub struct FailureLimiter {
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
}

impl FailureLimiter {
    /// Addresses with recent failures.
    pub fn tracked(&self) -> usize {
        self.failures.lock().map(|f| f.len()).unwrap_or(0)
    }
}

impl FailureLimiter {
    /// `Some(seconds to wait)` when `ip` is blocked now.
    pub fn blocked(&self, ip: IpAddr) -> Option<u64> {
        let mut all = self.failures.lock().ok()?;
        let list = all.get_mut(&ip)?;
        let now = Instant::now();
        list.retain(|t| now.duration_since(*t) < WINDOW);
        if list.len() >= MAX_FAILURES {
            let oldest = list.first().copied().unwrap_or(now);
            return Some((WINDOW - now.duration_since(oldest)).as_secs().max(1));
        }
        None
    }

    /// Records a failure of `ip` (and forgets addresses whose failures are all old).
    pub fn fail(&self, ip: IpAddr) {
        if let Ok(mut all) = self.failures.lock() {
            let now = Instant::now();
            all.retain(|_, list| list.last().is_some_and(|t| now.duration_since(*t) < WINDOW));
            let list = all.entry(ip).or_default();
            list.push(Instant::now());
            if list.len() > MAX_FAILURES * 2 {
                list.remove(0);
            }
        }
    }
}

/// Whether a request with `origin` (if any) arriving for `host` may proceed.
pub fn origin_allowed(origin: Option<&str>, host: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let origin = origin.trim_end_matches('/');
    if allowed.iter().any(|a| a.trim_end_matches('/') == origin) {
        return true;
    }
    host.is_some_and(|h| origin == format!("http://{h}") || origin == format!("https://{h}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_origins_and_limits() {
        assert!(token_matches("abc", "abc"));
        assert!(
            !token_matches("abc", "abd")
                && !token_matches("abc", "ab")
                && !token_matches("abc", "abcd")
        );
        assert!(origin_allowed(None, None, &[]));
        assert!(origin_allowed(
            Some("http://127.0.0.1:18789"),
            Some("127.0.0.1:18789"),
            &[]
        ));
        assert!(!origin_allowed(
            Some("http://evil.example"),
            Some("127.0.0.1:18789"),
            &[]
        ));
        assert!(origin_allowed(
            Some("https://app.example/"),
            Some("127.0.0.1:1"),
            &["https://app.example".into()]
        ));
        let limiter = FailureLimiter::default();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        for _ in 0..MAX_FAILURES - 1 {
            limiter.fail(ip);
        }
        assert!(limiter.blocked(ip).is_none());
        limiter.fail(ip);
        assert!(limiter.blocked(ip).is_some_and(|s| s >= 1));
        assert!(limiter.blocked("10.0.0.1".parse().unwrap()).is_none());
        limiter.fail("10.0.0.2".parse().unwrap());
        assert_eq!(limiter.tracked(), 2);
    }
}
