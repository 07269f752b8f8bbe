//! signal-cli run by LurkBot (`[channels.signal] cli = "signal-cli"`): started on the channel's
//! first receive — on the gateway holding its lease — as `signal-cli -a ACCOUNT daemon --http
//! 127.0.0.1:PORT --receive-mode on-connection` (Signal keeps messages until the channel's
//! stream connects), its stderr in the gateway's log, started again with back-off when it
//! exits, and stopped with the channel. Its pid is kept under the home, so a gateway killed
//! before it could stop it has the leftover stopped by the next start (it would hold the
//! account's data and the port).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::AsyncBufReadExt as _;

use crate::ChannelError;

/// The oldest signal-cli the Signal service is known to serve (0.14.5 follows a change of the
/// service's sealed-sender receiving; releases older than about three months stop working).
pub const MIN_VERSION: [u32; 3] = [0, 14, 5];

/// How long a starting daemon may take to answer `/api/v1/check` (a JVM, the account's keys).
const READY_WITHIN: Duration = Duration::from_secs(90);

/// signal-cli as a supervised daemon.
pub struct SignalDaemon {
    cli: PathBuf,
    account: String,
    port: u16,
    pid_file: PathBuf,
    child: tokio::sync::Mutex<Option<tokio::process::Child>>,
    failures: AtomicU32,
    http: reqwest::Client,
}

impl SignalDaemon {
    /// `cli` serving `account` on a free loopback port; its pid kept in `state_dir`.
    ///
    /// # Errors
    /// No port is free, or the HTTP client cannot be built.
    pub fn new(cli: &str, account: &str, state_dir: &Path) -> Result<Self, ChannelError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| ChannelError::Permanent(format!("no loopback port for signal-cli: {e}")))?
            .port();
        Ok(Self {
            cli: PathBuf::from(cli),
            account: account.to_string(),
            port,
            pid_file: state_dir.join("daemon.pid"),
            child: tokio::sync::Mutex::new(None),
            failures: AtomicU32::new(0),
            http: crate::http::client(Duration::from_secs(5))?,
        })
    }

    /// Where the daemon answers.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The account it serves.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// The arguments it is started with.
    pub fn args(&self) -> Vec<String> {
        [
            "-a",
            &self.account,
            "daemon",
            "--http",
            &format!("127.0.0.1:{}", self.port),
            "--receive-mode",
            "on-connection",
            "--no-receive-stdout",
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// Starts the daemon unless it runs, and waits until it answers.
    ///
    /// # Errors
    /// signal-cli is missing (for good), or it exited or did not answer in time (it is
    /// started again, after a pause growing with each failure, on the next call).
    pub async fn ensure(&self) -> Result<(), ChannelError> {
        let mut slot = self.child.lock().await;
        if let Some(child) = slot.as_mut() {
            match child.try_wait() {
                Ok(None) => return Ok(()),
                Ok(Some(status)) => {
                    tracing::warn!(%status, "signal-cli exited: starting it again");
                    self.failures.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => tracing::warn!(error = %e, "signal-cli's state unknown"),
            }
            *slot = None;
        }
        let failures = self.failures.load(Ordering::Relaxed);
        if failures > 0 {
            let pause = Duration::from_secs(1 << failures.min(6)).min(Duration::from_secs(60));
            tokio::time::sleep(pause).await;
        }
        stop_leftover(&self.pid_file, &self.account).await;
        let mut child = tokio::process::Command::new(&self.cli)
            .args(self.args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    ChannelError::Permanent(format!(
                        "signal-cli was not found as '{}': install it, or set [channels.signal] cli to its path",
                        self.cli.display()
                    ))
                } else {
                    ChannelError::Transient(format!("signal-cli could not start: {e}"))
                }
            })?;
        if let Some(pid) = child.id() {
            if let Some(dir) = self.pid_file.parent() {
                let _ = lurkbot_core::create_private_dir(dir);
            }
            let _ = lurkbot_core::write_atomic(&self.pid_file, pid.to_string().as_bytes());
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "signal-cli", "{line}");
                }
            });
        }
        tracing::info!(port = self.port, "signal-cli started");
        let ready = self.wait_ready(&mut child).await;
        *slot = Some(child);
        match ready {
            Ok(()) => {
                self.failures.store(0, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Stops the daemon: asked to end (SIGTERM), killed after 5 s.
    pub async fn stop(&self) {
        let Some(mut child) = self.child.lock().await.take() else {
            return;
        };
        if let Some(pid) = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
        let _ = std::fs::remove_file(&self.pid_file);
        tracing::info!("signal-cli stopped");
    }

    async fn wait_ready(&self, child: &mut tokio::process::Child) -> Result<(), ChannelError> {
        let deadline = tokio::time::Instant::now() + READY_WITHIN;
        let check = format!("{}/api/v1/check", self.base_url());
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(ChannelError::Transient(format!(
                    "signal-cli exited at start ({status}); its last lines are in the log"
                )));
            }
            if self
                .http
                .get(&check)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ChannelError::Transient(format!(
                    "signal-cli did not answer within {} s",
                    READY_WITHIN.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Stops a daemon a killed gateway left running for `account` (it holds the account's data and
/// would make the new one wait): the pid file's process, only when its command line is that
/// daemon's.
async fn stop_leftover(pid_file: &Path, account: &str) {
    let Some(pid) = std::fs::read_to_string(pid_file)
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok())
    else {
        return;
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let ours = args.contains(&b"daemon".as_slice()) && args.contains(&account.as_bytes());
    let Some(target) = rustix::process::Pid::from_raw(pid).filter(|_| ours) else {
        return;
    };
    tracing::warn!(
        pid,
        "stopping the signal-cli a previous gateway left running"
    );
    let _ = rustix::process::kill_process(target, rustix::process::Signal::TERM);
    for _ in 0..50 {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = rustix::process::kill_process(target, rustix::process::Signal::KILL);
}

/// The version `cli --version` prints (`signal-cli 0.14.6` → `0.14.6`).
///
/// # Errors
/// It cannot be run, or says something else.
pub fn version_of(cli: &str) -> Result<String, String> {
    let out = std::process::Command::new(cli)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("'{cli}' cannot be run: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .nth(1)
        .filter(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .ok_or_else(|| format!("'{cli} --version' said {:?}", text.trim()))
}

/// The version a running daemon at `base_url` reports (its JSON-RPC `version`).
///
/// # Errors
/// It does not answer, or answers something else.
pub async fn daemon_version(base_url: &str) -> Result<String, String> {
    let http = crate::http::client(Duration::from_secs(5)).map_err(|e| e.to_string())?;
    let bytes = http
        .post(format!("{}/api/v1/rpc", base_url.trim_end_matches('/')))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"version"}"#)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .map_err(|e| {
            format!(
                "no signal-cli daemon answers at {base_url}: {}",
                e.without_url()
            )
        })?
        .bytes()
        .await
        .map_err(|e| format!("the daemon at {base_url} broke off: {}", e.without_url()))?;
    let answer: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|_| format!("the daemon at {base_url} did not answer JSON-RPC"))?;
    answer["result"]["version"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the daemon at {base_url} did not say its version"))
}

/// Whether `version` (`0.14.6`, `0.14.7-SNAPSHOT`) is at least [`MIN_VERSION`].
pub fn new_enough(version: &str) -> bool {
    let parts: Vec<u32> = version
        .split(['.', '-'])
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    parts.as_slice() >= MIN_VERSION.as_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_compared_by_their_numbers() {
        assert!(new_enough("0.14.6"));
        assert!(new_enough("0.14.5"));
        assert!(new_enough("0.15.0-SNAPSHOT"));
        assert!(new_enough("1.0"));
        assert!(!new_enough("0.14.4.1"));
        assert!(!new_enough("0.13.22"));
    }
}
