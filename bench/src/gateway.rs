//! `lurkbot-bench gateway`: the gateway's figures of ARCHITECTURE.md §9.
//!
//! - Time from spawning `lurkbot gateway` to the first `GET /health` answered 200 (polled over
//!   raw TCP every 0.2 ms; median of `--runs`). Budget 6 ms.
//! - Idle RSS after 60 s (`--idle-secs` to shorten), read from /proc, with one IRC connection
//!   joined to a real ngircd on loopback (when installed) and two channels open (Telegram and
//!   Discord, served by the test servers written from their API documentation). Budget 12 MB.
//! - 1,000 WebSocket clients connecting at once (p50/p99 of connect+handshake); then, all
//!   connected, every one sends `health` at the same instant (p50/p99 of the round trip;
//!   budget p99 ≤ 10 ms).
//!
//! The peers cannot be run here (no network to fetch them), so their figures are quoted from
//! ARCHITECTURE.md §9 and labelled so; the spawn floor (`true`) is measured in the same run.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use lurkbot_gateway::protocol;
use lurkbot_test_support::discord_server::DiscordServer;
use lurkbot_test_support::irc_server::{IrcOptions, IrcServer};
use lurkbot_test_support::telegram_server::TelegramServer;

use crate::startup::{median, ms, run_once};

/// A spawned `lurkbot gateway`, killed when dropped.
pub(crate) struct Gateway {
    pub(crate) child: Child,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

pub(crate) fn health_ok(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(
        s,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).is_ok() && buf.starts_with(b"HTTP/1.1 200")
}

pub(crate) fn spawn(bin: &Path, home: &Path, port: u16) -> Result<Gateway, String> {
    let child = Command::new(bin)
        .arg("--home")
        .arg(home)
        .args(["gateway", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    Ok(Gateway { child })
}

/// Spawns a gateway on `port` and waits (10 s at most) until `/health` answers.
pub(crate) fn spawn_ready(bin: &Path, home: &Path, port: u16) -> Result<Gateway, String> {
    let gw = spawn(bin, home, port)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !health_ok(port) {
        if Instant::now() > deadline {
            return Err("the gateway did not start".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(gw)
}

/// Spawn → first /health 200.
fn time_to_health(bin: &Path, home: &Path) -> Result<Duration, String> {
    let port = free_port()?;
    let start = Instant::now();
    let gateway = spawn(bin, home, port)?;
    loop {
        if health_ok(port) {
            let elapsed = start.elapsed();
            drop(gateway);
            return Ok(elapsed);
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Err("the gateway did not answer /health within 10 s".into());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

pub(crate) fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Anonymous (heap, stacks) and file-backed (the binary's pages) parts of the RSS, KiB.
pub(crate) fn rss_split_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("RssAnon:"), field("RssFile:"))
}

/// CPU time the process's threads have used, from /proc/PID/task/*/schedstat (ns).
fn cpu_ns(pid: u32) -> u64 {
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

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connect and handshake; the time it took and the open socket.
async fn one_client(url: String, token: String) -> Result<(Duration, Socket), String> {
    let start = Instant::now();
    let (mut ws, _) = tokio_tungstenite::connect_async(&url)
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
        protocol::connect_params("lurkbot-bench", "bench", &token),
    );
    ws.send(Message::Text(connect.to_string().into()))
        .await
        .map_err(|e| e.to_string())?;
    wait_res(&mut ws, "c").await?;
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
    wait_res(&mut ws, "h").await?;
    Ok((t.elapsed(), ws))
}

pub(crate) async fn wait_res<S>(ws: &mut S, id: &str) -> Result<(), String>
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    wait_payload(ws, id).await.map(drop)
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

/// Starts ngircd (if installed), points the home's irc settings at it and joins through the
/// running gateway; the server stays up while the returned handle lives.
pub(crate) fn open_irc(bin: &Path, home: &Path) -> Result<Option<IrcServer>, String> {
    if Command::new("ngircd").arg("--version").output().is_err() {
        return Ok(None);
    }
    let server = IrcServer::start(&IrcOptions::default());
    let dir = home.join("skills/irc-cli/secrets");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::write(
        dir.join(".env"),
        format!(
            "IRC_SERVER=127.0.0.1\nIRC_PORT={}\nIRC_TLS=0\nIRC_CHANNEL=\"#bench\"\nIRC_NICK=lurkbot\n",
            server.port
        ),
    )
    .map_err(|e| e.to_string())?;
    let out = Command::new(bin)
        .arg("--home")
        .arg(home)
        .args(["exec", "irc connect"])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "irc connect failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(Some(server))
}

/// The two channels of the idle budget: Telegram (long polling) and Discord (a gateway
/// WebSocket with heartbeats), served by the test servers written from their API documentation
/// (neither platform has a local server). Their settings and tokens go into the home; the servers
/// stay up while the returned handles live.
struct Channels {
    telegram: TelegramServer,
    discord: DiscordServer,
}

const TELEGRAM_TOKEN: &str = "123456:bench-bot-token";
const DISCORD_TOKEN: &str = "bench-discord-token";

fn configure_channels(home: &Path) -> Result<Channels, String> {
    let telegram = TelegramServer::start(TELEGRAM_TOKEN);
    let discord = DiscordServer::start(DISCORD_TOKEN, 41_250);
    let config = home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
    text.push_str(&format!(
        "\n[channels.telegram]\nbase_url = \"{}\"\n\n[channels.discord]\nbase_url = \"{}\"\n",
        telegram.url(),
        discord.url()
    ));
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    let env = home.join(".env");
    let mut vars = std::fs::read_to_string(&env).unwrap_or_default();
    vars.push_str(&format!(
        "TELEGRAM_BOT_TOKEN={TELEGRAM_TOKEN}\nDISCORD_BOT_TOKEN={DISCORD_TOKEN}\n"
    ));
    std::fs::write(&env, vars).map_err(|e| e.to_string())?;
    Ok(Channels { telegram, discord })
}

impl Channels {
    /// Waits until both are connected: Telegram long-polling, Discord identified.
    fn wait_open(&self) -> Result<(), String> {
        let limit = Duration::from_secs(20);
        if self.telegram.wait_offsets(1, limit).is_empty() {
            return Err("the Telegram channel did not poll".into());
        }
        if !self.discord.wait_ready(1, limit) {
            return Err("the Discord channel did not identify".into());
        }
        Ok(())
    }
}

pub(crate) fn gateway(
    bin: &Path,
    runs: usize,
    idle_secs: u64,
    clients: usize,
) -> Result<(), String> {
    let home = std::env::temp_dir().join(format!("lurkbot-bench-gw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    run_once(
        Command::new(bin)
            .arg("--home")
            .arg(&home)
            .args(["init", "--quiet"]),
    )?;
    let config = std::fs::read_to_string(home.join("config.toml")).map_err(|e| e.to_string())?;
    let token = config
        .lines()
        .find_map(|l| l.strip_prefix("token = \""))
        .map(|t| t.trim_end_matches('"').to_string())
        .ok_or("no token in config.toml")?;

    let floor = median(runs, || run_once(&mut Command::new("true")))?;
    let to_health = median(runs, || time_to_health(bin, &home))?;
    println!("LurkBot gateway benchmark — binary {}", bin.display());
    println!(
        "start → /health 200 (median of {runs}): {:.2} ms (budget 6 ms; ZeptoClaw 6 ms, ZeroClaw 16–19 ms per ARCHITECTURE.md §9; spawn floor `true` {:.2} ms)",
        ms(to_health),
        ms(floor)
    );

    // The idle figure is a gateway started again on a home it has run on before: the memory
    // index exists (a fresh home's first start indexes the notes once, loading SQLite).
    run_once(
        Command::new(bin)
            .arg("--home")
            .arg(&home)
            .args(["memory", "index"]),
    )?;
    let channels = configure_channels(&home)?;
    let port = free_port()?;
    let gw = spawn_ready(bin, &home, port)?;
    // The budget counts one IRC connection open (a real ngircd on loopback, when installed).
    let irc = open_irc(bin, &home)?;
    channels.wait_open()?;
    std::thread::sleep(Duration::from_secs(idle_secs));
    let idle = rss_kib(gw.child.id());
    println!(
        "idle RSS after {idle_secs} s: {:.1} MB ({} and two channels open, Telegram and Discord; budget 12 MB; ZeptoClaw 14 MB, ZeroClaw 25–29 MB per ARCHITECTURE.md §9)",
        idle as f64 * 1024.0 / 1e6,
        if irc.is_some() {
            "one IRC connection joined"
        } else {
            "no IRC connection: ngircd is not installed"
        }
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let url = format!("ws://127.0.0.1:{port}/ws");
    // All connect at once (the handshake figures), then, all connected, all send `health` at
    // the same instant (the round-trip figures: the budget is for all of them at once).
    let cpu_before = cpu_ns(gw.child.id());
    let (mut handshakes, sockets) = runtime.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|_| tokio::spawn(one_client(url.clone(), token.clone())))
            .collect();
        let (mut times, mut sockets) = (Vec::new(), Vec::new());
        for t in tasks {
            let (time, ws) = t.await.map_err(|e| e.to_string())??;
            times.push(time);
            sockets.push(ws);
        }
        Ok::<_, String>((times, sockets))
    })?;
    let busy = rss_kib(gw.child.id());
    let cpu_connected = cpu_ns(gw.child.id());
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
    let cpu_after = cpu_ns(gw.child.id());
    handshakes.sort();
    rtts.sort();
    println!(
        "{clients} WebSocket clients: connect+handshake all at once p50 {:.1} ms, p99 {:.1} ms; then `health` from all of them at the same instant: round trip p50 {:.2} ms, p99 {:.2} ms (budget p99 10 ms); RSS with them open {:.1} MB",
        ms(percentile(&handshakes, 0.5)),
        ms(percentile(&handshakes, 0.99)),
        ms(percentile(&rtts, 0.5)),
        ms(percentile(&rtts, 0.99)),
        busy as f64 * 1024.0 / 1e6
    );
    println!(
        "  the gateway's own CPU: {:.1} ms for the {clients} handshakes ({:.0} µs each), {:.1} ms for the {clients} `health` answers ({:.0} µs each); the rest of each round trip is the load generator sharing the same cores",
        cpu_connected.saturating_sub(cpu_before) as f64 / 1e6,
        cpu_connected.saturating_sub(cpu_before) as f64 / 1e3 / clients as f64,
        cpu_after.saturating_sub(cpu_connected) as f64 / 1e6,
        cpu_after.saturating_sub(cpu_connected) as f64 / 1e3 / clients as f64,
    );
    drop(gw);
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}
