//! `lurkbot-bench soak`: bounded memory over a long run (ARCHITECTURE.md §9).
//!
//! A release gateway with the scripted model (the `fake` provider in this process, answering
//! every turn with one `session_status` call and then text) runs, at once:
//! - `--turns` OpenAI-API turns (default 10,000) from six clients, half stateless, half on 200
//!   stateful sessions (`x-lurkbot-session`);
//! - `--cycles` WebSocket cycles (default 10,000) from two clients: connect, handshake,
//!   `chat.send` on one of 200 sessions, `agent.wait`, disconnect;
//! - two cron jobs every second (an agent turn on its own session, a system event) and the
//!   heartbeat every second;
//! - with ngircd installed, one IRC connection joined to `#bench` while eight other clients
//!   flood the channel with lines.
//!
//! RSS is read from /proc every second. The run fails when the RSS after it exceeds the RSS
//! after the first 100 turns by more than 8 MiB, or when a structure the gateway reports in
//! `status.retained` (session slots and the agents they hold, run records, sub-agents, hub
//! listeners, approvals, auth-failure records) ends above its bound.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use lurkbot_gateway::protocol;
use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::gateway::{open_irc, rss_kib, rss_split_kib, spawn_ready};
use crate::soak_report::{Sample, chart, retained_over_bounds};
use crate::ws_burst::Socket;
use lurkbot_test_support::ports::free_port;

/// Allowed growth of RSS from the 100th turn to the end.
const GROWTH_BUDGET_KIB: u64 = 8 * 1024;
/// Stateful sessions the load spreads over (each of the API and the WebSocket load).
const SESSIONS: usize = 200;
const API_CLIENTS: usize = 6;
const WS_CLIENTS: usize = 2;
const FLOODERS: usize = 8;

/// The scripted model: a tool call for a new user message, text once the tool answered.
pub(crate) fn answer(body: &Value) -> Step {
    let messages = body["messages"].as_array();
    let last_is_tool = messages
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    if last_is_tool {
        Step::text("Done: the session is fine.")
    } else {
        let n = messages.map_or(0, Vec::len);
        Step::call(&format!("call_{n}"), "session_status", json!({}))
    }
}

/// Shared progress of the load.
#[derive(Default)]
pub(crate) struct Progress {
    turns: AtomicUsize,
    failures: AtomicUsize,
    /// RSS (KiB) when the 100th turn ended.
    baseline_kib: AtomicU64,
    /// Its anonymous part (KiB).
    baseline_anon_kib: AtomicU64,
    /// RSS (KiB) when half the turns had ended.
    halfway_kib: AtomicU64,
    /// Turns planned.
    planned: AtomicUsize,
    last_error: std::sync::Mutex<Option<String>>,
}

impl Progress {
    /// Sets the turns planned (the halfway mark).
    pub(crate) fn planned(&self, turns: usize) {
        self.planned.store(turns, Ordering::Relaxed);
    }

    /// (turns done, failures, the last failure).
    pub(crate) fn counts(&self) -> (usize, usize, String) {
        let last = self
            .last_error
            .lock()
            .ok()
            .and_then(|l| l.clone())
            .unwrap_or_default();
        (
            self.turns.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
            last,
        )
    }

    /// (RSS, its anonymous part) in KiB after the 100th turn, and RSS when half had ended.
    pub(crate) fn marks(&self) -> (u64, u64, u64) {
        (
            self.baseline_kib.load(Ordering::Relaxed),
            self.baseline_anon_kib.load(Ordering::Relaxed),
            self.halfway_kib.load(Ordering::Relaxed),
        )
    }

    /// Records one turn's outcome (and the RSS at the 100th and the halfway turn).
    pub(crate) fn done(&self, pid: u32, outcome: Result<(), String>) {
        if let Err(e) = outcome {
            self.failures.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut last) = self.last_error.lock() {
                *last = Some(e);
            }
            return;
        }
        let done = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
        if done == 100 {
            self.baseline_kib.store(rss_kib(pid), Ordering::Relaxed);
            self.baseline_anon_kib
                .store(rss_split_kib(pid).0, Ordering::Relaxed);
        }
        if done == self.planned.load(Ordering::Relaxed) / 2 {
            self.halfway_kib.store(rss_kib(pid), Ordering::Relaxed);
        }
    }
}

/// One OpenAI-API turn over its own connection; `session` set: a stateful one.
pub(crate) fn api_turn(
    port: u16,
    token: &str,
    session: Option<String>,
    n: usize,
) -> Result<(), String> {
    let body = json!({
        "model": "lurkbot",
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": format!("How is the session? ({n})")}
        ]
    })
    .to_string();
    let session_header = session
        .map(|s| format!("x-lurkbot-session: {s}\r\n"))
        .unwrap_or_default();
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n{session_header}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    if answer.starts_with("HTTP/1.1 200") && answer.contains("Done: the session is fine.") {
        Ok(())
    } else {
        Err(format!(
            "API turn: {}",
            answer.lines().next().unwrap_or("no answer")
        ))
    }
}

async fn call(ws: &mut Socket, id: &str, method: &str, params: Value) -> Result<Value, String> {
    ws.send(Message::Text(
        protocol::request(id, method, params).to_string().into(),
    ))
    .await
    .map_err(|e| e.to_string())?;
    crate::ws_burst::wait_payload(ws, id).await
}

pub(crate) async fn connect(port: u16, token: &str) -> Result<Socket, String> {
    let url = format!("ws://127.0.0.1:{port}/ws");
    crate::ws_burst::connect(&url, token)
        .await
        .map(|(_, ws)| ws)
}

/// Connect, handshake, one turn, disconnect.
pub(crate) async fn ws_cycle(
    port: u16,
    token: &str,
    session: String,
    n: usize,
) -> Result<(), String> {
    let mut ws = connect(port, token).await?;
    let started = call(
        &mut ws,
        "s",
        protocol::method::CHAT_SEND,
        json!({"sessionKey": session, "message": format!("How is it going? ({n})")}),
    )
    .await?;
    let run = started["runId"].as_str().unwrap_or_default().to_string();
    let end = call(
        &mut ws,
        "w",
        protocol::method::AGENT_WAIT,
        json!({"runId": run, "timeoutMs": 60_000}),
    )
    .await?;
    let _ = ws.close(None).await;
    if end["status"] == "ok" {
        Ok(())
    } else {
        Err(format!("WebSocket turn: {end}"))
    }
}

/// `status.retained` over a fresh connection.
async fn retained(port: u16, token: &str) -> Result<Value, String> {
    let mut ws = connect(port, token).await?;
    let status = call(&mut ws, "st", protocol::method::STATUS, json!({})).await?;
    let _ = ws.close(None).await;
    Ok(status["retained"].clone())
}

/// Clients that join `#bench` and write lines into it until `stop`; lines written.
fn flood(port: u16, stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<usize>> {
    (0..FLOODERS)
        .map(|i| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                    return 0;
                };
                let _ = write!(
                    s,
                    "NICK flood{i}\r\nUSER flood{i} 0 * :flood\r\nJOIN #bench\r\n"
                );
                // Answers are read (and PINGs answered) so the server keeps the client.
                if let Ok(reader) = s.try_clone() {
                    let mut writer = s.try_clone().ok();
                    std::thread::spawn(move || {
                        for line in BufReader::new(reader).lines().map_while(Result::ok) {
                            if let (Some(rest), Some(w)) = (line.strip_prefix("PING"), &mut writer)
                            {
                                let _ = write!(w, "PONG{rest}\r\n");
                            }
                        }
                    });
                }
                let mut lines = 0;
                while !stop.load(Ordering::Relaxed) {
                    if write!(s, "PRIVMSG #bench :flood line {lines} from client {i}\r\n").is_err()
                    {
                        break;
                    }
                    lines += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = write!(s, "QUIT :done\r\n");
                lines
            })
        })
        .collect()
}

fn cron_add(bin: &Path, home: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(bin)
        .arg("--home")
        .arg(home)
        .args(["cron", "add"])
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cron add failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Prepares the home: the scripted model's URL, a heartbeat and two cron jobs every second.
fn prepare(bin: &Path, home: &Path, model_url: &str) -> Result<String, String> {
    let token = prepare_plain(bin, home, model_url)?;
    crate::startup::run_once(Command::new(bin).arg("--home").arg(home).args([
        "config",
        "set",
        "heartbeat.every",
        "1s",
    ]))?;
    // The heartbeat calls the model only when HEARTBEAT.md holds more than comments.
    std::fs::write(
        home.join("workspace/HEARTBEAT.md"),
        "Check the session status.\n",
    )
    .map_err(|e| e.to_string())?;
    cron_add(
        bin,
        home,
        &["--name", "soak-turn", "--every", "1s", "--message", "tick"],
    )?;
    cron_add(
        bin,
        home,
        &[
            "--name",
            "soak-event",
            "--every",
            "1s",
            "--system-event",
            "tock",
        ],
    )?;
    Ok(token)
}

/// `lurkbot init` of a new home; its gateway token.
pub(crate) fn init_home(bin: &Path, home: &Path) -> Result<String, String> {
    crate::startup::run_once(
        Command::new(bin)
            .arg("--home")
            .arg(home)
            .args(["init", "--quiet"]),
    )?;
    let config = std::fs::read_to_string(home.join("config.toml")).map_err(|e| e.to_string())?;
    config
        .lines()
        .find_map(|l| l.strip_prefix("token = \""))
        .map(|t| t.trim_end_matches('"').to_string())
        .ok_or_else(|| "no token in config.toml".to_string())
}

/// A new home answered by the scripted model at `model_url`; its gateway token.
pub(crate) fn prepare_plain(bin: &Path, home: &Path, model_url: &str) -> Result<String, String> {
    let token = init_home(bin, home)?;
    crate::startup::run_once(Command::new(bin).arg("--home").arg(home).args([
        "config",
        "set",
        "agent.model",
        "openai/gpt-4o-mini",
    ]))?;
    std::fs::write(
        home.join(".env"),
        format!("OPENAI_BASE_URL={model_url}/v1\nOPENAI_API_KEY=sk-bench\n"),
    )
    .map_err(|e| e.to_string())?;
    Ok(token)
}

/// A two-thread runtime and the scripted model on it ([`answer`] for every request, nothing
/// recorded).
pub(crate) fn scripted_model() -> Result<(tokio::runtime::Runtime, FakeProvider), String> {
    scripted_model_answering(answer)
}

/// [`scripted_model`] answering every request with what `respond` makes of its body.
pub(crate) fn scripted_model_answering(
    respond: impl Fn(&serde_json::Value) -> Step + Send + Sync + 'static,
) -> Result<(tokio::runtime::Runtime, FakeProvider), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let fake = runtime.block_on(FakeProvider::start(Vec::new()));
    fake.record(false);
    fake.respond(respond);
    Ok((runtime, fake))
}

pub(crate) fn soak(bin: &Path, turns: usize, cycles: usize) -> Result<(), String> {
    let (runtime, fake) = scripted_model()?;
    let home = std::env::temp_dir().join(format!("lurkbot-bench-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let token = prepare(bin, &home, &fake.url)?;
    let port = free_port();
    let gw = spawn_ready(bin, &home, port)?;
    let pid = gw.child.id();
    let irc = open_irc(bin, &home)?;
    let stop_flood = Arc::new(AtomicBool::new(false));
    let flooders = irc
        .as_ref()
        .map(|server| flood(server.port, stop_flood.clone()))
        .unwrap_or_default();

    let progress = Arc::new(Progress::default());
    progress.planned(turns + cycles);
    let start = Instant::now();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (progress, sampling) = (progress.clone(), sampling.clone());
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while sampling.load(Ordering::Relaxed) {
                samples.push(Sample {
                    secs: start.elapsed().as_secs_f64(),
                    kib: rss_kib(pid),
                    turns: progress.turns.load(Ordering::Relaxed),
                });
                std::thread::sleep(Duration::from_secs(1));
            }
            samples
        })
    };

    let api: Vec<_> = (0..API_CLIENTS)
        .map(|c| {
            let (token, progress) = (token.clone(), progress.clone());
            std::thread::spawn(move || {
                for n in (c..turns).step_by(API_CLIENTS) {
                    let session =
                        (n % 2 == 1).then(|| format!("agent:main:dm:soak:s{}", n % SESSIONS));
                    progress.done(pid, api_turn(port, &token, session, n));
                }
            })
        })
        .collect();
    let ws_progress = progress.clone();
    let ws_token = token.clone();
    runtime.block_on(async move {
        let tasks: Vec<_> = (0..WS_CLIENTS)
            .map(|c| {
                let (token, progress) = (ws_token.clone(), ws_progress.clone());
                tokio::spawn(async move {
                    for n in (c..cycles).step_by(WS_CLIENTS) {
                        let session = format!("agent:main:dm:soakws:w{}", n % SESSIONS);
                        progress.done(pid, ws_cycle(port, &token, session, n).await);
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    for t in api {
        let _ = t.join();
    }
    let loaded = start.elapsed();
    stop_flood.store(true, Ordering::Relaxed);
    let lines: usize = flooders.into_iter().filter_map(|t| t.join().ok()).sum();
    let after_kib = rss_kib(pid);
    let (after_anon, after_file) = rss_split_kib(pid);
    // Settled: the cron jobs and the heartbeat keep running a few seconds with no load.
    std::thread::sleep(Duration::from_secs(5));
    let settled_kib = rss_kib(pid);
    let retained = runtime.block_on(retained(port, &token))?;
    sampling.store(false, Ordering::Relaxed);
    let samples = sampler.join().map_err(|_| "the sampler failed")?;
    drop(gw);
    drop(irc);
    let _ = std::fs::remove_dir_all(&home);

    let done = progress.turns.load(Ordering::Relaxed);
    let failures = progress.failures.load(Ordering::Relaxed);
    let baseline = progress.baseline_kib.load(Ordering::Relaxed);
    let peak = samples.iter().map(|s| s.kib).max().unwrap_or(after_kib);
    println!(
        "LurkBot soak — {turns} API turns ({API_CLIENTS} clients, half stateless, half on {SESSIONS} sessions) and {cycles} WebSocket cycles ({WS_CLIENTS} clients, {SESSIONS} sessions), cron every 1 s ×2, heartbeat every 1 s, {}",
        if lines > 0 {
            format!("IRC flood of {lines} lines from {FLOODERS} clients")
        } else {
            "no IRC (ngircd is not installed)".into()
        }
    );
    println!(
        "{done} turns in {:.0} s ({:.0} turns/s), {failures} failed",
        loaded.as_secs_f64(),
        done as f64 / loaded.as_secs_f64().max(0.001)
    );
    println!("{}", chart(&samples, 64, 12));
    println!(
        "RSS after 100 turns {:.1} MiB; after the run {:.1} MiB (+{:.1} MiB, budget +8 MiB); 5 s later {:.1} MiB; peak {:.1} MiB",
        baseline as f64 / 1024.0,
        after_kib as f64 / 1024.0,
        after_kib.saturating_sub(baseline) as f64 / 1024.0,
        settled_kib as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    let baseline_anon = progress.baseline_anon_kib.load(Ordering::Relaxed);
    println!(
        "halfway ({} turns) {:.1} MiB → end {:.1} MiB; at the end {:.1} MiB anonymous (heap and stacks; {:.1} MiB after 100 turns) and {:.1} MiB of the binary's pages",
        (turns + cycles) / 2,
        mib(progress.halfway_kib.load(Ordering::Relaxed)),
        mib(after_kib),
        mib(after_anon),
        mib(baseline_anon),
        mib(after_file)
    );
    println!("retained at the end: {retained}");
    let mut problems = Vec::new();
    if after_kib.saturating_sub(baseline) > GROWTH_BUDGET_KIB {
        problems.push(format!(
            "RSS grew {:.1} MiB from the 100th turn to the end (budget 8 MiB)",
            after_kib.saturating_sub(baseline) as f64 / 1024.0
        ));
    }
    problems.extend(retained_over_bounds(&retained, 2 * SESSIONS + 8));
    if failures > 0 {
        let last = progress
            .last_error
            .lock()
            .ok()
            .and_then(|l| l.clone())
            .unwrap_or_default();
        problems.push(format!("{failures} turns failed; the last: {last}"));
    }
    if problems.is_empty() {
        println!("soak: PASS");
        Ok(())
    } else {
        Err(format!("soak FAILED: {}", problems.join("; ")))
    }
}
