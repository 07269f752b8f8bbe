//! Loopback ports for the real servers the tests start: a free one to give a server, and a
//! wait until the server listens on it.

use std::time::{Duration, Instant};

/// How long a server may take to open its port (a wait that ends early once it listens).
const LISTEN_WAIT: Duration = Duration::from_secs(30);

/// A loopback port nothing listens on, for a server a test starts (and may start again on the
/// same address). It is taken below the OS's ephemeral range, which every `bind(…:0)` and
/// outgoing connection draws from, and never handed out twice by one test process: a port a
/// test's server died on stays free for its restart, and no server started elsewhere on
/// "any free port" can open there meanwhile (a balancer would take it for the dead gateway).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let (low, high) = (
        FIXED_PORTS_FROM,
        ephemeral_low().max(FIXED_PORTS_FROM + 1_000),
    );
    let span = u32::from(high - low);
    // Test processes run one after another; each starts somewhere else in the range.
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = low + ((start + n) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {low}..{high}");
}

/// Where the ports [`free_port`] hands out begin (above the well-known services).
const FIXED_PORTS_FROM: u16 = 10_000;

/// The first port of the OS's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// Waits until `port` on loopback accepts a connection; `what` names the server when it never
/// does.
pub fn wait_port(port: u16, what: &str) {
    let deadline = Instant::now() + LISTEN_WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on {port} in {} s",
            LISTEN_WAIT.as_secs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_below_the_ephemeral_range_and_never_repeat() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        let low = ephemeral_low();
        assert!(
            ports
                .iter()
                .all(|p| *p >= FIXED_PORTS_FROM && (*p < low || low <= FIXED_PORTS_FROM + 1_000)),
            "{ports:?}"
        );
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len(), "{ports:?}");
        // What the OS gives a `bind(…:0)` is never one of them.
        let any = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        assert!(any >= low, "{any}");
    }
}
