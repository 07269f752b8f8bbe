//! Loopback ports for the real servers the tests start: a free one to give a server, and a
//! wait until the server listens on it.

use std::time::{Duration, Instant};

/// How long a server may take to open its port (a wait that ends early once it listens).
const LISTEN_WAIT: Duration = Duration::from_secs(30);

/// A loopback port nothing listens on (the OS picks it; free until someone binds it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
