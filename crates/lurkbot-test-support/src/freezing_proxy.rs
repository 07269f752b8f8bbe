//! A TCP proxy in front of a real server that can make its open connections half-open: after
//! [`FreezingProxy::freeze`], every connection open at that moment stays open and carries
//! nothing more either way — what a dead NAT entry or a crashed middlebox does to a client —
//! while connections made afterwards reach the server as before. The liveness tests of
//! channels whose platform is a real server (IRC, Matrix, IMAP) put it between the channel and
//! the server.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a pump looks whether the proxy was dropped.
const TICK: Duration = Duration::from_millis(100);

/// A proxy on a free loopback port to `127.0.0.1:upstream`.
pub struct FreezingProxy {
    /// The port clients connect to.
    pub port: u16,
    connections: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
    accepted: Arc<AtomicUsize>,
    from_server: Arc<AtomicUsize>,
    stopped: Arc<AtomicBool>,
}

impl FreezingProxy {
    /// Starts forwarding to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let proxy = Self {
            port,
            connections: Arc::default(),
            accepted: Arc::default(),
            from_server: Arc::default(),
            stopped: Arc::default(),
        };
        let (connections, accepted, stopped, from_server) = (
            proxy.connections.clone(),
            proxy.accepted.clone(),
            proxy.stopped.clone(),
            proxy.from_server.clone(),
        );
        std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                    Err(_) => return,
                };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let frozen = Arc::new(AtomicBool::new(false));
                connections.lock().unwrap().push(frozen.clone());
                accepted.fetch_add(1, Ordering::SeqCst);
                for (from, to, counted) in [
                    (
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        None,
                    ),
                    (server, client, Some(from_server.clone())),
                ] {
                    let (frozen, stopped) = (frozen.clone(), stopped.clone());
                    std::thread::spawn(move || pump(from, to, &frozen, &stopped, counted));
                }
            }
        });
        proxy
    }

    /// Every connection open now goes silent both ways (and stays open); new ones still work.
    pub fn freeze(&self) {
        for connection in self.connections.lock().unwrap().iter() {
            connection.store(true, Ordering::SeqCst);
        }
    }

    /// How many reads from the server were passed on to clients so far (a reply, a PONG).
    pub fn from_server(&self) -> usize {
        self.from_server.load(Ordering::SeqCst)
    }

    /// How many connections were made through the proxy so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FreezingProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either ends — or, frozen, swallows what comes and keeps both
/// open (until the proxy is dropped).
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    frozen: &AtomicBool,
    stopped: &AtomicBool,
    counted: Option<Arc<AtomicUsize>>,
) {
    let _ = from.set_read_timeout(Some(TICK));
    let mut buf = [0u8; 16 * 1024];
    while !stopped.load(Ordering::SeqCst) {
        match from.read(&mut buf) {
            Ok(0) => {
                if !frozen.load(Ordering::SeqCst) {
                    let _ = to.shutdown(Shutdown::Write);
                    return;
                }
                // Frozen: the other side never learns; wait for the proxy's end.
                while !stopped.load(Ordering::SeqCst) {
                    std::thread::sleep(TICK);
                }
                return;
            }
            Ok(n) => {
                if frozen.load(Ordering::SeqCst) {
                    continue;
                }
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
                if let Some(counted) = &counted {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}
