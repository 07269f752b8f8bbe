//! A TCP proxy that holds every chunk 1 ms each way (configurable), the way a database on
//! another host is away: this kernel has no `netem`. Each direction of a connection is a
//! reader thread that stamps what it reads and a writer thread that sends it when due, so the
//! delay is added to each round trip without limiting throughput. A side that closes closes
//! the other (a killed gateway's connection ends at the server too, and its locks go).
//!
//! It counts what clients send — the chunks a client writes and waits on are its round trips
//! — so the bench states how many round trips a turn needs from what really crossed.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running proxy; stops accepting when dropped (open connections end with their peers).
pub(crate) struct DelayProxy {
    port: u16,
    stop: Arc<AtomicBool>,
    /// Chunks clients sent (requests on the wire).
    sent: Arc<AtomicU64>,
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards to `127.0.0.1:target`, each chunk held
    /// `delay` each way.
    pub(crate) fn start(target: u16, delay: Duration) -> Result<Self, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let (accepting, counted) = (stop.clone(), sent.clone());
        std::thread::Builder::new()
            .name("delay-proxy".into())
            .spawn(move || {
                while !accepting.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            let _ = client.set_nonblocking(false);
                            if let Ok(server) = TcpStream::connect(("127.0.0.1", target)) {
                                relay(client, server, delay, counted.clone());
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        Err(_) => return,
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Self { port, stop, sent })
    }

    /// The port clients connect to.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Chunks clients have sent so far.
    pub(crate) fn client_chunks(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Both directions of one connection.
fn relay(client: TcpStream, server: TcpStream, delay: Duration, sent: Arc<AtomicU64>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(client_out), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    one_way(client, server_out, delay, Some(sent));
    one_way(server, client_out, delay, None);
}

/// Reads `from`, writes to `to` each chunk `delay` after it was read; `count` counts chunks.
fn one_way(mut from: TcpStream, mut to: TcpStream, delay: Duration, count: Option<Arc<AtomicU64>>) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let reader_side = from.try_clone().ok();
    let _ = std::thread::Builder::new()
        .name("delay-read".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(0) | Err(_) => return, // the sender's end closes the writer's
                    Ok(n) => {
                        if let Some(count) = &count {
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                        if tx
                            .send((Instant::now() + delay, buf[..n].to_vec()))
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
        });
    let _ = std::thread::Builder::new()
        .name("delay-write".into())
        .spawn(move || {
            while let Ok((due, bytes)) = rx.recv() {
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                if to.write_all(&bytes).is_err() {
                    break;
                }
            }
            // The reading side ended (or this one failed): both ends of the pair close.
            let _ = to.shutdown(Shutdown::Both);
            if let Some(reader) = reader_side {
                let _ = reader.shutdown(Shutdown::Both);
            }
        });
}
