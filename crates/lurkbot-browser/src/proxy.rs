//! The policy proxy (ARCHITECTURE.md §5.3): Chromium sends **every** request through it
//! (`--proxy-server`, `--proxy-bypass-list=<-loopback>`), and it applies the network policy of
//! §4.6 that the gate hands it — navigations, redirects (each hop is its own request),
//! subresources, `fetch`/XHR, popups, workers, WebSockets and `CONNECT` tunnels for HTTPS. The
//! proxy resolves the name itself, checks every address, and connects to the address it
//! checked; Chromium resolves nothing. A refused request gets `403` and is counted for the
//! tool's next answer.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use lurkbot_term::NetworkPolicy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

use crate::blocked::Blocked;

/// Longest request head read from Chromium.
const MAX_HEAD: usize = 64 * 1024;
/// How long Chromium has to send a request head, and a server to accept a connection.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Hosts Chromium calls on its own (component updates, the account check) whatever the flags:
/// their requests obey the policy like any other, but a refusal is logged, not told to the
/// model, which did not ask for them.
const CHROMIUM_OWN_HOSTS: &[&str] = &[
    "update.googleapis.com",
    "accounts.google.com",
    "clients2.google.com",
    "clientservices.googleapis.com",
    "optimizationguide-pa.googleapis.com",
];

/// The rules every request of the browser is held to, and what they refused: shared by the
/// proxy (addresses), the request interceptor (schemes) and the download watcher.
#[derive(Default)]
pub(crate) struct Rules {
    policy: RwLock<NetworkPolicy>,
    blocked: Mutex<Vec<Blocked>>,
    blocked_total: std::sync::atomic::AtomicU64,
}

impl Rules {
    /// The network policy in force.
    pub(crate) fn policy(&self) -> NetworkPolicy {
        self.policy
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Counts a refused request, to be told with the next action's answer.
    pub(crate) fn record(&self, blocked: Blocked) {
        tracing::info!(
            target = blocked.target.as_str(),
            reason = blocked.reason.as_str(),
            "browser request refused by the network policy"
        );
        crate::lock(&self.blocked).push(blocked);
        self.blocked_total
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A running policy proxy on a loopback port.
pub struct PolicyProxy {
    addr: SocketAddr,
    shared: Arc<Rules>,
    task: tokio::task::JoinHandle<()>,
}

impl PolicyProxy {
    /// Listens on `127.0.0.1` (a free port) and serves until dropped.
    ///
    /// # Errors
    /// The port could not be opened.
    pub async fn start(policy: NetworkPolicy) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Rules {
            policy: RwLock::new(policy),
            ..Rules::default()
        });
        let serving = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let shared = Arc::clone(&serving);
                tokio::spawn(async move {
                    let _ = serve(stream, &shared).await;
                });
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// Where Chromium is pointed.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The rules it applies, for the other guards of the same browser.
    pub(crate) fn rules(&self) -> Arc<Rules> {
        Arc::clone(&self.shared)
    }

    /// Applies new rules (the owner changed `[network]`) to the next requests.
    pub fn set_policy(&self, policy: NetworkPolicy) {
        *self
            .shared
            .policy
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = policy;
    }

    /// The requests refused since the last call.
    pub fn take_blocked(&self) -> Vec<Blocked> {
        std::mem::take(&mut *crate::lock(&self.shared.blocked))
    }

    /// Requests refused since the proxy started.
    pub fn blocked_total(&self) -> u64 {
        self.shared
            .blocked_total
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for PolicyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request head, parsed.
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    /// Bytes read after the head (the start of a body).
    rest: Vec<u8>,
}

async fn serve(mut client: TcpStream, shared: &Rules) -> std::io::Result<()> {
    let Some(head) = read_head(&mut client).await? else {
        return Ok(());
    };
    let policy = shared.policy();
    if head.method.eq_ignore_ascii_case("CONNECT") {
        // HTTPS and WebSockets: a tunnel to host:port, checked like an https:// URL there.
        let Ok(url) = Url::parse(&format!("https://{}/", head.target)) else {
            return refuse(&mut client, shared, &head.target, "not host:port").await;
        };
        let target = target_of(&url);
        let addr = match policy.check(&url).await {
            Ok(addr) => addr,
            Err(e) => return refuse(&mut client, shared, &target, &e.to_string()).await,
        };
        let Some(mut upstream) = connect(addr).await else {
            return client
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                .await;
        };
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(&head.rest).await?;
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        return Ok(());
    }
    // Plain HTTP arrives in absolute form; it is sent on in origin form.
    let Ok(mut url) = Url::parse(&head.target) else {
        return refuse(&mut client, shared, &head.target, "not an absolute URL").await;
    };
    if url.scheme() == "ws" {
        let _ = url.set_scheme("http");
    }
    let target = target_of(&url);
    let addr = match policy.check(&url).await {
        Ok(addr) => addr,
        Err(e) => return refuse(&mut client, shared, &target, &e.to_string()).await,
    };
    let Some(mut upstream) = connect(addr).await else {
        return client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            .await;
    };
    upstream.write_all(&origin_form(&head, &url)).await?;
    upstream.write_all(&head.rest).await?;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

/// `host:port` of a URL, for the record.
fn target_of(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

async fn connect(addr: SocketAddr) -> Option<TcpStream> {
    tokio::time::timeout(HEAD_TIMEOUT, TcpStream::connect(addr))
        .await
        .ok()
        .and_then(Result::ok)
}

/// The request rewritten for the server: origin-form target, hop-by-hop headers dropped, one
/// request per connection (the next request may be for another host and is checked anew).
fn origin_form(head: &Head, url: &Url) -> Vec<u8> {
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let upgrade = head
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("upgrade"));
    let mut out = format!("{} {path} HTTP/1.1\r\n", head.method).into_bytes();
    for (name, value) in &head.headers {
        let hop = [
            "proxy-connection",
            "proxy-authorization",
            "connection",
            "keep-alive",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h));
        if hop {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(if upgrade {
        b"Connection: Upgrade\r\n\r\n".as_slice()
    } else {
        b"Connection: close\r\n\r\n".as_slice()
    });
    out
}

async fn refuse(
    client: &mut TcpStream,
    shared: &Rules,
    target: &str,
    reason: &str,
) -> std::io::Result<()> {
    let host = target.rsplit_once(':').map_or(target, |(h, _)| h);
    if CHROMIUM_OWN_HOSTS.contains(&host) {
        tracing::info!(target, reason, "Chromium's own request refused");
        return answer_refused(client, reason).await;
    }
    shared.record(Blocked {
        target: target.to_string(),
        reason: reason.to_string(),
        scheme: false,
    });
    answer_refused(client, reason).await
}

async fn answer_refused(client: &mut TcpStream, reason: &str) -> std::io::Result<()> {
    let body = format!("LurkBot's network policy refused this request: {reason}\n");
    let answer = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nX-LurkBot-Blocked: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(answer.as_bytes()).await
}

async fn read_head(client: &mut TcpStream) -> std::io::Result<Option<Head>> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + HEAD_TIMEOUT;
    loop {
        let n = match tokio::time::timeout_at(deadline, client.read(&mut chunk)).await {
            Ok(read) => read?,
            Err(_) => return Ok(None),
        };
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let head = Head {
                    method: request.method.unwrap_or_default().to_string(),
                    target: request.path.unwrap_or_default().to_string(),
                    headers: request
                        .headers
                        .iter()
                        .map(|h| (h.name.to_string(), h.value.to_vec()))
                        .collect(),
                    rest: buf.get(len..).unwrap_or_default().to_vec(),
                };
                return Ok(Some(head));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            _ => return Ok(None),
        }
    }
}
