//! The WebSocket side of the benches: connecting with the handshake, waiting for a response,
//! and the 1,000-client burst — all connect at once, then, all connected, every one sends
//! `health` at the same instant (the budget is for all of them at once).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use lurkbot_gateway::protocol;

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects to `url`, waits for the challenge and completes the handshake; the time it took
/// and the open socket.
pub(crate) async fn connect(url: &str, token: &str) -> Result<(Duration, Socket), String> {
    let start = Instant::now();
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|e| e.to_string())?;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(_))) => break,
            Some(Ok(_)) => {}
            _ => return Err("closed before the challenge".into()),
        }
    }
    let connect = protocol::request(
        "c",
        protocol::method::CONNECT,
        protocol::connect_params("lurkbot-bench", "bench", token),
    );
    ws.send(Message::Text(connect.to_string().into()))
        .await
        .map_err(|e| e.to_string())?;
    wait_payload(&mut ws, "c").await?;
    Ok((start.elapsed(), ws))
}

/// One `health` round trip on an open socket, started when `go` opens.
async fn one_health(
    mut ws: Socket,
    go: Arc<tokio::sync::Barrier>,
) -> Result<(Duration, Socket), String> {
    let health = protocol::request("h", protocol::method::HEALTH, json!({})).to_string();
    go.wait().await;
    let t = Instant::now();
    ws.send(Message::Text(health.into()))
        .await
        .map_err(|e| e.to_string())?;
    wait_payload(&mut ws, "h").await?;
    Ok((t.elapsed(), ws))
}

/// Waits for the response to request `id` (events in between are skipped): its payload.
pub(crate) async fn wait_payload<S>(ws: &mut S, id: &str) -> Result<Value, String>
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => {
                let mut v: Value = serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?;
                if v["type"] == "res" && v["id"] == id {
                    return if v["ok"] == true {
                        Ok(v["payload"].take())
                    } else {
                        Err(v["error"].to_string())
                    };
                }
            }
            Some(Ok(_)) => {}
            _ => return Err("closed".into()),
        }
    }
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

/// CPU time the process's threads have used, from /proc/PID/task/*/schedstat (ns).
pub(crate) fn cpu_ns(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
                .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// What a burst measured.
pub(crate) struct Burst {
    /// Connect + handshake times, sorted.
    pub(crate) handshakes: Vec<Duration>,
    /// `health` round trips, sorted.
    pub(crate) rtts: Vec<Duration>,
    /// The server's RSS with every client connected, KiB.
    pub(crate) rss_kib: u64,
    /// The server's CPU for all handshakes and for all `health` answers, ns.
    pub(crate) cpu_handshakes_ns: u64,
    pub(crate) cpu_health_ns: u64,
    /// The load generator's (this process's) CPU while the `health` burst ran, ns: it shares
    /// the cores with the server.
    pub(crate) client_cpu_health_ns: u64,
}

/// `clients` connect to `url` at once; then all send `health` at the same instant. `pid` is the
/// server's, for its CPU and memory.
pub(crate) fn burst(url: &str, token: &str, pid: u32, clients: usize) -> Result<Burst, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let cpu_before = cpu_ns(pid);
    let (mut handshakes, sockets) = runtime.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|_| {
                let (url, token) = (url.to_string(), token.to_string());
                tokio::spawn(async move { connect(&url, &token).await })
            })
            .collect();
        let (mut times, mut sockets) = (Vec::new(), Vec::new());
        for t in tasks {
            let (time, ws) = t.await.map_err(|e| e.to_string())??;
            times.push(time);
            sockets.push(ws);
        }
        Ok::<_, String>((times, sockets))
    })?;
    let rss_kib = crate::gateway::rss_kib(pid);
    let cpu_connected = cpu_ns(pid);
    let client_before = cpu_ns(std::process::id());
    let go = Arc::new(tokio::sync::Barrier::new(clients));
    let mut rtts = runtime.block_on(async {
        let tasks: Vec<_> = sockets
            .into_iter()
            .map(|ws| tokio::spawn(one_health(ws, go.clone())))
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.map_err(|e| e.to_string())??);
        }
        Ok::<_, String>(out.into_iter().map(|(rtt, _ws)| rtt).collect::<Vec<_>>())
    })?;
    let cpu_after = cpu_ns(pid);
    let client_after = cpu_ns(std::process::id());
    handshakes.sort();
    rtts.sort();
    Ok(Burst {
        handshakes,
        rtts,
        rss_kib,
        cpu_handshakes_ns: cpu_connected.saturating_sub(cpu_before),
        cpu_health_ns: cpu_after.saturating_sub(cpu_connected),
        client_cpu_health_ns: client_after.saturating_sub(client_before),
    })
}
