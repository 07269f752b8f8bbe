//! `lurkbot-bench gateway`: the gateway's figures of ARCHITECTURE.md §9.
//!
//! - Time from spawning `lurkbot gateway` to the first `GET /health` answered 200 (polled over
//!   raw TCP every 0.2 ms; median of `--runs`). Budget 6 ms.
//! - Idle RSS after 60 s (`--idle-secs` to shorten), read from /proc, with one IRC connection
//!   joined to a real ngircd on loopback (when installed) and two channels open (Telegram and
//!   Discord, served by the test servers written from their API documentation). Budget 8 MB.
//!   The gateway measured idle runs from a copy of `--bin`, as installed: the linker's fresh
//!   output sits in the page cache as single pages, a copied (or read-from-disk) file in 64 KiB
//!   folios, which the kernel maps whole on a fault — what users run (0.2 MB more on
//!   2026-11-29).
//!   Then (`whatsapp_idle.rs`) a gateway without channels beside one with WhatsApp's linked
//!   device enabled.
//! - 1,000 WebSocket clients connecting at once (p50/p99 of connect+handshake); then, all
//!   connected, every one sends `health` at the same instant (p50/p99 of the round trip;
//!   budget p99 ≤ 10 ms).
//!
//! The same 1,000-client burst is then run against a bare WebSocket server on the same stack
//! (`ws_floor.rs`), started by this bench: the floor this machine sets, and LurkBot's ratio to
//! it. The startup peers (ZeptoClaw, ZeroClaw) cannot be fetched here, so their figures are
//! quoted from ARCHITECTURE.md §9 and labelled so; the spawn floor (`true`) is measured in the
//! same run. OpenClaw, Hermes Agent and nanobot are measured by `peers.rs`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lurkbot_test_support::discord_server::DiscordServer;
use lurkbot_test_support::irc_server::{IrcOptions, IrcServer};
use lurkbot_test_support::ports::{free_port, wait_port};
use lurkbot_test_support::telegram_server::TelegramServer;

use crate::proc_group::status_kib;
use crate::startup::{median, ms, run_once};
use crate::ws_burst::{Burst, burst, percentile};

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

pub(crate) fn health_ok(port: u16) -> bool {
    http_ok(port, "/health")
}

/// `GET path` on a loopback port answered `200`.
pub(crate) fn http_ok(port: u16, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 12];
    // HTTP/1.0 or 1.1 (nanobot answers 1.0).
    s.read_exact(&mut buf).is_ok() && buf.starts_with(b"HTTP/1.") && &buf[8..12] == b" 200"
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
    let port = free_port();
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
    status_kib(pid, "VmRSS:")
}

/// Anonymous (heap, stacks) and file-backed (the binary's pages) parts of the RSS, KiB.
pub(crate) fn rss_split_kib(pid: u32) -> (u64, u64) {
    (status_kib(pid, "RssAnon:"), status_kib(pid, "RssFile:"))
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

/// A copy of the binary in a scratch folder (removed with it). Copied as `install`, a package
/// manager or an unpacked release would write it, so its pages are cached the way a user's are.
struct Installed {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Installed {
    fn copy(bin: &Path) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("lurkbot");
        std::fs::copy(bin, &path).map_err(|e| format!("copying {}: {e}", bin.display()))?;
        Ok(Self { _dir: dir, path })
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
    let token = crate::soak::init_home(bin, &home)?;

    let floor = median(runs, || run_once(&mut Command::new("true")))?;
    let to_health = median(runs, || time_to_health(bin, &home))?;
    println!("LurkBot gateway benchmark — binary {}", bin.display());
    println!(
        "start → /health 200 (median of {runs}): {:.2} ms = {:.1}× starting `true` in this run ({:.2} ms; budget 8.6×, 6 ms where `true` takes 0.7 ms; ZeptoClaw 6 ms, ZeroClaw 16–19 ms per ARCHITECTURE.md §9)",
        ms(to_health),
        ms(to_health) / ms(floor).max(0.001),
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
    let installed = Installed::copy(bin)?;
    let port = free_port();
    let gw = spawn_ready(&installed.path, &home, port)?;
    // The budget counts one IRC connection open (a real ngircd on loopback, when installed).
    let irc = open_irc(bin, &home)?;
    channels.wait_open()?;
    std::thread::sleep(Duration::from_secs(idle_secs));
    let idle = crate::mem_split::MemSplit::of(gw.child.id());
    println!(
        "idle RSS after {idle_secs} s, the binary installed (copied): {:.1} MB ({} and two channels open, Telegram and Discord; budget 8 MB; ZeptoClaw 14 MB, ZeroClaw 25–29 MB per ARCHITECTURE.md §9)\n  of which {}",
        idle.rss as f64 * 1024.0 / 1e6,
        if irc.is_some() {
            "one IRC connection joined"
        } else {
            "no IRC connection: ngircd is not installed"
        },
        idle.describe()
    );

    let url = format!("ws://127.0.0.1:{port}/ws");
    let ours = burst(&url, &token, gw.child.id(), clients)?;
    report(&format!("{clients} WebSocket clients"), &ours, clients);
    drop(gw);
    // The floor in the same run: a bare server on the same stack (ws_floor.rs).
    let floor_port = free_port();
    let floor = Gateway {
        child: Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
            .args(["ws-floor", "--port", &floor_port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?,
    };
    wait_port(floor_port, "the floor server");
    let bare = burst(
        &format!("ws://127.0.0.1:{floor_port}/"),
        &token,
        floor.child.id(),
        clients,
    )?;
    report(
        "  floor, a bare tokio-tungstenite server (same run)",
        &bare,
        clients,
    );
    println!(
        "  LurkBot ÷ floor: health p99 {:.1}×, CPU per health answer {:.1}×",
        ms(percentile(&ours.rtts, 0.99)) / ms(percentile(&bare.rtts, 0.99)).max(0.001),
        ours.cpu_health_ns as f64 / (bare.cpu_health_ns as f64).max(1.0)
    );
    drop(floor);
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}

fn report(label: &str, b: &Burst, clients: usize) {
    println!(
        "{label}: connect+handshake all at once p50 {:.1} ms, p99 {:.1} ms; then `health` from all of them at the same instant: round trip p50 {:.2} ms, p99 {:.2} ms (budget p99 10 ms); RSS with them open {:.1} MB",
        ms(percentile(&b.handshakes, 0.5)),
        ms(percentile(&b.handshakes, 0.99)),
        ms(percentile(&b.rtts, 0.5)),
        ms(percentile(&b.rtts, 0.99)),
        b.rss_kib as f64 * 1024.0 / 1e6
    );
    println!(
        "    server CPU: {:.1} ms for the {clients} handshakes ({:.0} µs each), {:.1} ms for the {clients} `health` answers ({:.0} µs each); the load generator's CPU meanwhile, on the same cores: {:.1} ms",
        b.cpu_handshakes_ns as f64 / 1e6,
        b.cpu_handshakes_ns as f64 / 1e3 / clients as f64,
        b.cpu_health_ns as f64 / 1e6,
        b.cpu_health_ns as f64 / 1e3 / clients as f64,
        b.client_cpu_health_ns as f64 / 1e6,
    );
}
