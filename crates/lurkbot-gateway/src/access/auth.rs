//! Who may talk to the gateway.
//!
//! - The token: `LURKBOT_GATEWAY_TOKEN` (environment or the home's `.env`), else
//!   `gateway.token`. `gateway.auth = "none"` drops it, but only on a loopback bind; a
//!   non-loopback bind without a token (or with one under 24 characters) refuses to start.
//!   Compared in constant time.
//! - Failed attempts: only **wrong** credentials count (a request without any gets 401 and
//!   counts for nothing, so a cross-site `<img>` cannot lock the owner out). After 5 wrong ones
//!   within a minute the address is refused for a minute; past [`MAX_GLOBAL_FAILURES`] wrong ones
//!   from all addresses together within a minute, every credential check waits out the minute.
//! - DNS rebinding: a `Host` header must name the bound address, `localhost`, or a name in
//!   `gateway.allowed_hosts`; a browser `Origin` must be such a host on the bound port, or be
//!   listed in `gateway.allowed_origins`. Never compared with the request's own `Host`.
//!   Clients that send no `Origin` (SDKs, scripts) are not browsers and pass that check.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use lurkbot_core::split_host_port;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed in [`WINDOW`] before an address is blocked.
pub const MAX_FAILURES: usize = 5;
/// The counting window and the block length.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Wrong credentials from all addresses together in [`WINDOW`] before every check waits.
pub const MAX_GLOBAL_FAILURES: usize = 60;

/// Compares secrets without an early exit.
pub fn token_matches(expected: &str, given: &str) -> bool {
    lurkbot_core::secret_matches(expected, given)
}

/// Failed-attempt counts per client address (or, for sign-ins, per user name).
#[derive(Debug)]
pub struct FailureLimiter<K = IpAddr> {
    failures: Mutex<HashMap<K, Vec<Instant>>>,
    global: Mutex<Vec<Instant>>,
}

impl<K> Default for FailureLimiter<K> {
    fn default() -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            global: Mutex::new(Vec::new()),
        }
    }
}

impl<K: std::hash::Hash + Eq> FailureLimiter<K> {
    /// Addresses with recent failures.
    pub fn tracked(&self) -> usize {
        self.failures.lock().map(|f| f.len()).unwrap_or(0)
    }
}

impl<K: std::hash::Hash + Eq> FailureLimiter<K> {
    /// `Some(seconds to wait)` when `ip` is blocked now, or every address is.
    pub fn blocked(&self, ip: K) -> Option<u64> {
        let now = Instant::now();
        if let Ok(mut global) = self.global.lock() {
            global.retain(|t| now.duration_since(*t) < WINDOW);
            if global.len() >= MAX_GLOBAL_FAILURES {
                let oldest = global.first().copied().unwrap_or(now);
                return Some((WINDOW - now.duration_since(oldest)).as_secs().max(1));
            }
        }
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

    /// Records a wrong credential from `ip` (and forgets addresses whose failures are all old).
    pub fn fail(&self, ip: K) {
        if let Ok(mut global) = self.global.lock() {
            let now = Instant::now();
            global.retain(|t| now.duration_since(*t) < WINDOW);
            if global.len() < MAX_GLOBAL_FAILURES * 2 {
                global.push(now);
            }
        }
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

/// Whether a `Host` header value names this gateway: the bound address (or any IP literal when
/// bound to all addresses: an IP literal cannot be rebound), `localhost`, or an allowed name.
/// A port, when given, must be the bound one, unless `allowed_hosts` lists that `host:port`
/// itself (a proxy's address). `bound` is `None` before the listener is known.
pub fn host_allowed(host: &str, bound: Option<SocketAddr>, allowed_hosts: &[String]) -> bool {
    let (name, port) = split_host_port(host.trim());
    let name = name.to_ascii_lowercase();
    // A `host:port` the owner allowed as written (a proxy in front, on a port of its own).
    if allowed_hosts
        .iter()
        .any(|h| h.trim().eq_ignore_ascii_case(host.trim()))
    {
        return true;
    }
    if let (Some(p), Some(b)) = (port, bound)
        && p != b.port()
    {
        return false;
    }
    if name == "localhost"
        || allowed_hosts
            .iter()
            .any(|h| h.trim().eq_ignore_ascii_case(&name))
    {
        return true;
    }
    let Ok(ip) = name.parse::<IpAddr>() else {
        return false;
    };
    match bound {
        Some(b) if b.ip().is_unspecified() => true,
        Some(b) => b.ip() == ip || (b.ip().is_loopback() && ip.is_loopback()),
        None => ip.is_loopback(),
    }
}

/// Whether a request with `origin` (if any) may proceed: no `Origin` (not a browser), one listed
/// in `allowed_origins`, or an http(s) origin whose host is [`host_allowed`] on the bound port.
pub fn origin_allowed(
    origin: Option<&str>,
    bound: Option<SocketAddr>,
    allowed_hosts: &[String],
    allowed_origins: &[String],
) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let origin = origin.trim().trim_end_matches('/');
    if allowed_origins
        .iter()
        .any(|a| a.trim().trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let (_, port) = split_host_port(authority);
    let with_port = match port {
        Some(_) => authority.to_string(),
        None => format!("{authority}:{default_port}"),
    };
    host_allowed(&with_port, bound, allowed_hosts)
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
        let bound: Option<SocketAddr> = "127.0.0.1:18789".parse().ok();
        assert!(origin_allowed(None, bound, &[], &[]));
        assert!(origin_allowed(
            Some("http://127.0.0.1:18789"),
            bound,
            &[],
            &[]
        ));
        assert!(origin_allowed(
            Some("http://localhost:18789"),
            bound,
            &[],
            &[]
        ));
        assert!(!origin_allowed(
            Some("http://evil.example:18789"),
            bound,
            &[],
            &[]
        ));
        assert!(!origin_allowed(
            Some("http://127.0.0.1:9999"),
            bound,
            &[],
            &[]
        ));
        assert!(!origin_allowed(Some("null"), bound, &[], &[]));
        assert!(origin_allowed(
            Some("https://app.example/"),
            bound,
            &[],
            &["https://app.example".into()]
        ));
        assert!(origin_allowed(
            Some("http://lurk.lan:18789"),
            bound,
            &["lurk.lan".into()],
            &[]
        ));
        assert!(host_allowed("127.0.0.1:18789", bound, &[]));
        assert!(host_allowed("localhost", bound, &[]));
        assert!(!host_allowed("evil.example:18789", bound, &[]));
        assert!(!host_allowed("127.0.0.1:1", bound, &[]));
        // A proxy's address, listed as written, is taken on its own port; a name is not.
        let proxy = ["127.0.0.1:8443".to_string(), "gw.example".to_string()];
        assert!(host_allowed("127.0.0.1:8443", bound, &proxy));
        assert!(!host_allowed("gw.example:8443", bound, &proxy));
        assert!(host_allowed("gw.example", bound, &proxy));
        assert!(!host_allowed("10.0.0.5:18789", bound, &[]));
        let any: Option<SocketAddr> = "0.0.0.0:18789".parse().ok();
        assert!(host_allowed("10.0.0.5:18789", any, &[]));
        assert!(!host_allowed("rebind.example:18789", any, &[]));
        assert!(host_allowed("[::1]:18789", "[::1]:18789".parse().ok(), &[]));
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
        // Wrong credentials from many addresses together block everyone for the window.
        let many = FailureLimiter::default();
        for i in 0..MAX_GLOBAL_FAILURES {
            let ip = IpAddr::from([10, 1, (i / 256) as u8, (i % 256) as u8]);
            assert!(many.blocked(ip).is_none(), "{i}");
            many.fail(ip);
        }
        assert!(many.blocked("192.0.2.1".parse().unwrap()).is_some());
    }
}
