//! The accept loop: the limits an unauthenticated client meets before any handler runs
//! (ARCHITECTURE.md §6). At most `gateway.max_connections` connections are open at once (one more is
//! closed at once); request headers must arrive within [`HEADER_TIMEOUT`]; a connection with no
//! traffic either way for [`IDLE_TIMEOUT`] is closed (an upgraded WebSocket stays busy with its
//! 15 s ticks). On stop, new connections are refused, open ones finish their current request and
//! close, and the loop returns once they are all gone.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};

use crate::state::AppState;

/// Time allowed for a request's headers to arrive.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no traffic for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long stopping waits for open connections to finish.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `stop` resolves; then tells every connection and waits.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    app: Router,
    state: AppState,
    stop: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let max = state.config().gateway.max_connections.clamp(1, 1 << 20);
    let slots = Arc::new(Semaphore::new(max));
    tokio::pin!(stop);
    // Told to stop, the gateway drains first: it keeps serving (new work is refused) while
    // the running turns finish, within the grace (`ops/shutdown.rs`).
    let mut draining: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        let stopping = draining.is_some();
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                // Out of file descriptors and the like: wait a little instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop, if !stopping => {
                draining = Some(tokio::spawn(crate::ops::shutdown::drain(state.clone())));
                continue;
            }
            _ = async {
                if let Some(task) = draining.as_mut() {
                    let _ = task.await;
                }
            }, if stopping => break,
        };
        // HTTP connections hold a slot; upgraded WebSockets are counted by the state.
        let busy = max - slots.available_permits() + state.connections();
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) if busy < max => slot,
            _ => {
                drop(stream);
                continue;
            }
        };
        let served = serve_connection(stream, peer, app.clone(), state.stopping());
        tokio::spawn(async move {
            served.await;
            // The slot is free as soon as the exchange is over, before the socket is dropped.
            drop(slot);
        });
    }
    drop(listener);
    state.begin_shutdown();
    state.host.shutdown().await;
    let max_permits = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, slots.acquire_many(max_permits)).await;
    Ok(())
}

/// Serves one accepted connection with `app` until it ends, or gracefully once `stopping`
/// turns true (the gateway's port, and `[metrics] listen`'s: one server in the binary).
pub(crate) async fn serve_connection(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    app: Router,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(IdleTimeout::new(stream, IDLE_TIMEOUT));
    let service = TowerToHyperService::new(app.layer(axum::Extension(ConnectInfo(peer))));
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(io, service)
        .with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = async { stopping.wait_for(|s| *s).await.map(|_| ()) } => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// A stream that fails with `TimedOut` once nothing was read or written for `limit`.
struct IdleTimeout {
    inner: TcpStream,
    limit: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl IdleTimeout {
    fn new(inner: TcpStream, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
        }
    }

    fn touch(&mut self) {
        self.deadline.as_mut().reset(Instant::now() + self.limit);
    }

    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline.as_mut().poll(cx).is_ready()
    }
}

fn idle_error() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection idle")
}

impl AsyncRead for IdleTimeout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                self.touch();
                Poll::Ready(result)
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(idle_error())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for IdleTimeout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(result) => {
                self.touch();
                Poll::Ready(result)
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(idle_error())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(result) => {
                self.touch();
                Poll::Ready(result)
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(idle_error())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
