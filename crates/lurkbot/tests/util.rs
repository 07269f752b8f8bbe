//! A small builder over the real binary (like just's `Test`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Output {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

pub struct Test {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
}

impl Test {
    /// A fresh, not yet initialised home.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        Self { dir, home }
    }

    /// A home after `lurkbot init`.
    pub fn init() -> Self {
        let t = Self::new();
        let out = t.run(&["init", "--quiet"]);
        assert_eq!(out.status, 0, "{}", out.stderr);
        t
    }

    /// The gateway token `init` wrote to config.toml.
    pub fn gateway_token(&self) -> String {
        std::fs::read_to_string(self.path("config.toml"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("token = \""))
            .unwrap()
            .trim_end_matches('"')
            .to_string()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.home.join(rel)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_stdin(args, None)
    }

    pub fn run_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        self.run_full(args, stdin, &[])
    }

    /// The binary with a cleared environment plus `env`.
    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lurkbot"));
        cmd.env_clear()
            .env("HOME", self.dir.path())
            .env("LURKBOT_HOME", &self.home)
            .envs(env.iter().copied())
            .current_dir(self.dir.path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_full(args, None, env)
    }

    pub fn run_full(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
        let mut child = self.command(args, env).spawn().unwrap();
        if let Some(text) = stdin {
            // A child may exit without reading its input (as `chat` does when no model is
            // configured); the pipe is then closed and the write fails with BrokenPipe, which
            // is not an error of the child. Anything else is.
            match child.stdin.take().unwrap().write_all(text.as_bytes()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => panic!("writing the child's stdin: {e}"),
            }
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        let o = Output {
            status: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(
            !o.stderr.contains("panicked"),
            "the binary panicked: {}",
            o.stderr
        );
        o
    }

    /// `lurkbot exec --json COMMAND`, parsed; checks the exit status equals the envelope's.
    pub fn exec_json(&self, command: &str) -> serde_json::Value {
        let out = self.run(&["exec", "--json", command]);
        let env = out.json();
        assert_eq!(
            env["exit_code"], out.status,
            "exit status must equal exit_code"
        );
        env
    }

    /// Every audit record's text.
    pub fn audit_text(&self) -> String {
        files_text(&self.path("artifacts/terminal_exec/runs"))
    }
}

pub fn files_text(dir: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return String::new();
    };
    entries
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect()
}

/// Every file below `dir`, as relative paths.
pub fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A running `lurkbot gateway` process (stopped on drop), its stderr drained so its logs never
/// fill the pipe.
pub struct Running {
    pub child: std::process::Child,
    /// `ws://127.0.0.1:PORT/ws`.
    pub ws: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    drain: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Stops it with SIGTERM; its exit status and whole stderr.
    pub fn stop(mut self) -> (i32, String) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap().code().unwrap_or(-1);
        // The drain thread ends at EOF, which the exit brings.
        if let Some(drain) = self.drain.take() {
            drain.join().unwrap();
        }
        (status, self.stderr())
    }
}

impl Running {
    /// Waits for it to exit by itself (after a stop already sent); its exit status and whole
    /// stderr.
    pub fn exited(mut self) -> (i32, String) {
        let status = self.child.wait().unwrap().code().unwrap_or(-1);
        if let Some(drain) = self.drain.take() {
            drain.join().unwrap();
        }
        (status, self.stderr())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `lurkbot gateway --port 0` on `t`'s home and waits for its address line.
/// Reads `pipe` to its end on a thread of its own; what was read so far, and the thread.
pub fn drain(
    mut pipe: impl std::io::Read + Send + 'static,
) -> (
    std::sync::Arc<std::sync::Mutex<String>>,
    std::thread::JoinHandle<()>,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = seen.clone();
    let thread = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (seen, thread)
}

pub fn start_gateway(t: &Test, env: &[(&str, &str)]) -> Running {
    start_gateway_on(t, env, 0)
}

/// A loopback port for a gateway (restarted on the same address, or named by a balancer).
pub use lurkbot_test_support::ports::free_port;

/// Like [`start_gateway`], on `port` (a restart on the same address).
pub fn start_gateway_on(t: &Test, env: &[(&str, &str)], port: u16) -> Running {
    use std::io::{BufRead, BufReader};
    let port = port.to_string();
    let mut child = t
        .command(&["gateway", "--port", &port], env)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .nth(4)
        .unwrap_or_else(|| panic!("no address line: {line}"));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let ws = format!("ws://{addr}/ws");
    let (stderr, drain) = drain(child.stderr.take().unwrap());
    Running {
        child,
        ws,
        addr,
        stderr,
        drain: Some(drain),
    }
}
