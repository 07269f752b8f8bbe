//! One configured MCP server: how to reach it, its connection when there is one, and what is
//! known of it (state, tools, the last error). A server that fails — to start, mid-call, or by
//! not answering in time — is dropped (a child process is killed) and marked `failed`; the next
//! call starts it again, at once after a first failure, then after a back-off (1 s, doubling to
//! 60 s) while it keeps failing. A call during the back-off fails at once, so a broken server
//! never holds a turn.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lurkbot_core::McpServerConfig;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::rpc::Connection;

/// Longest back-off between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Bytes of a server's stderr kept for error messages.
const STDERR_TAIL: usize = 1_024;

/// One tool a server lists.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tool {
    /// The server's name for it.
    pub(crate) name: String,
    /// What it does.
    pub(crate) description: Option<String>,
    /// The JSON Schema of its arguments (an object).
    pub(crate) input_schema: Value,
}

impl Tool {
    /// A tool of a `tools/list` answer; `None` without a name.
    fn from_listed(listed: &Value) -> Option<Self> {
        let name = listed["name"].as_str()?.to_string();
        let input_schema = match &listed["inputSchema"] {
            Value::Object(schema) => Value::Object(schema.clone()),
            _ => serde_json::json!({"type": "object"}),
        };
        Some(Self {
            name,
            description: listed["description"].as_str().map(str::to_string),
            input_schema,
        })
    }
}

/// What is known of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Not started yet.
    Idle,
    /// Starting.
    Starting,
    /// Connected; its tools are known.
    Ready,
    /// Failed; the error says why.
    Failed,
    /// `enabled = false`.
    Disabled,
}

impl State {
    /// The name `lurkbot mcp list` shows.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Disabled => "disabled",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Status {
    pub(crate) state: State,
    pub(crate) error: Option<String>,
    /// The tools last listed (kept while failed, so the model can still call — and so restart
    /// — the server).
    pub(crate) tools: Vec<Tool>,
    failures: u32,
    retry_at: Option<Instant>,
}

pub(crate) struct Slot {
    pub(crate) name: String,
    pub(crate) config: McpServerConfig,
    /// The child's environment, or why it cannot be made.
    env: Result<Vec<(String, String)>, String>,
    cwd: PathBuf,
    /// The connection; the lock also makes (re)starts one at a time.
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    pub(crate) status: Mutex<Status>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Secret values, masked in what the server printed before it reaches an error or a log.
    redactor: lurkbot_term::Redactor,
}

impl Slot {
    pub(crate) fn new(
        name: String,
        config: McpServerConfig,
        env: Result<Vec<(String, String)>, String>,
        cwd: PathBuf,
        redactor: lurkbot_term::Redactor,
    ) -> Self {
        let state = if config.enabled {
            State::Idle
        } else {
            State::Disabled
        };
        Self {
            name,
            config,
            env,
            cwd,
            conn: tokio::sync::Mutex::new(None),
            status: Mutex::new(Status {
                state,
                error: None,
                tools: Vec::new(),
                failures: 0,
                retry_at: None,
            }),
            stderr: Arc::default(),
            redactor,
        }
    }

    /// Whether a failed server that never listed tools may be started again now.
    pub(crate) fn due_for_retry(&self) -> bool {
        let status = self.status();
        status.state == State::Failed
            && status.tools.is_empty()
            && status.retry_at.is_none_or(|at| at <= Instant::now())
    }

    pub(crate) fn status(&self) -> Status {
        self.status.lock().map(|s| s.clone()).unwrap_or(Status {
            state: State::Failed,
            error: Some("state unavailable".into()),
            tools: Vec::new(),
            failures: 0,
            retry_at: None,
        })
    }

    fn set(&self, change: impl FnOnce(&mut Status)) {
        if let Ok(mut status) = self.status.lock() {
            change(&mut status);
        }
    }

    /// Marks the server failed (its connection is dropped by the caller): the next call may
    /// start it at once after one failure, then after 1 s, 2 s, 4 s … up to 60 s.
    fn fail(&self, error: String) {
        // What a server or its HTTP endpoint said may echo a secret the server was given.
        let error = self.redactor.text(&error);
        tracing::warn!(server = self.name.as_str(), "MCP server failed: {error}");
        self.set(|s| {
            s.failures = s.failures.saturating_add(1);
            let backoff = match s.failures {
                0 | 1 => Duration::ZERO,
                n => Duration::from_secs(1u64 << (n - 2).min(6)).min(MAX_BACKOFF),
            };
            s.retry_at = Some(Instant::now() + backoff);
            s.state = State::Failed;
            s.error = Some(error);
        });
    }

    fn stderr_tail(&self) -> String {
        let tail = self
            .stderr
            .lock()
            .map(|mut b| {
                String::from_utf8_lossy(b.make_contiguous())
                    .trim()
                    .to_string()
            })
            .unwrap_or_default();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends: {}", self.redactor.text(&tail))
        }
    }

    /// The peer to call, starting the server when it is not running and its back-off is over.
    ///
    /// # Errors
    /// Why there is none (disabled, in back-off, failed to start).
    pub(crate) async fn peer(&self) -> Result<Arc<Connection>, String> {
        let mut conn = self.conn.lock().await;
        if let Some(service) = conn.as_ref() {
            if !service.is_closed() {
                return Ok(service.clone());
            }
            *conn = None;
            self.fail(format!(
                "the server closed the connection{}",
                self.stderr_tail()
            ));
        }
        let status = self.status();
        if status.state == State::Disabled {
            return Err(format!(
                "MCP server '{}' is disabled (enabled = false)",
                self.name
            ));
        }
        if let Some(at) = status.retry_at
            && at > Instant::now()
        {
            return Err(format!(
                "MCP server '{}' failed ({}); LurkBot starts it again in {} s",
                self.name,
                status.error.unwrap_or_default(),
                at.saturating_duration_since(Instant::now())
                    .as_secs()
                    .max(1)
            ));
        }
        self.set(|s| s.state = State::Starting);
        let startup = Duration::from_secs(self.config.startup_timeout_seconds.max(1));
        let started = match tokio::time::timeout(startup, self.connect()).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "did not start and list its tools within {} s{}",
                startup.as_secs(),
                self.stderr_tail()
            )),
        };
        match started {
            Ok((service, tools)) => {
                let peer = Arc::new(service);
                *conn = Some(peer.clone());
                self.set(|s| {
                    s.state = State::Ready;
                    s.error = None;
                    s.tools = tools;
                    s.failures = 0;
                    s.retry_at = None;
                });
                Ok(peer)
            }
            Err(error) => {
                self.fail(error.clone());
                Err(format!("MCP server '{}' {error}", self.name))
            }
        }
    }

    async fn connect(&self) -> Result<(Connection, Vec<Tool>), String> {
        let (service, what) = match (&self.config.url, self.config.command.split_first()) {
            (Some(url), _) => (Connection::http(url)?, url.to_string()),
            (None, Some((program, args))) => {
                let env = self.env.clone()?;
                let mut command = tokio::process::Command::new(program);
                command
                    .args(args)
                    .env_clear()
                    .envs(env)
                    .current_dir(&self.cwd)
                    .stderr(Stdio::piped());
                let (service, stderr) = Connection::spawn(command)
                    .map_err(|e| format!("cannot start '{program}': {e}"))?;
                if let Some(mut stderr) = stderr {
                    let tail = self.stderr.clone();
                    tokio::spawn(async move {
                        let mut buf = [0u8; 512];
                        while let Ok(n) = stderr.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            if let Ok(mut tail) = tail.lock() {
                                tail.extend(&buf[..n]);
                                let excess = tail.len().saturating_sub(STDERR_TAIL);
                                tail.drain(..excess);
                            }
                        }
                    });
                }
                (service, format!("'{program}'"))
            }
            (None, None) => return Err("has neither command nor url".into()),
        };
        if let Err(e) = service.initialize().await {
            service.close().await;
            return Err(format!(
                "{what} did not complete the MCP handshake: {e}{}",
                self.stderr_tail()
            ));
        }
        let listed = match service.list_tools().await {
            Ok(listed) => listed,
            Err(e) => {
                service.close().await;
                return Err(format!("did not list its tools: {e}"));
            }
        };
        let tools = listed.iter().filter_map(Tool::from_listed).collect();
        Ok((service, tools))
    }

    /// Calls `tool` with `args` within the server's timeout.
    ///
    /// # Errors
    /// The message for the model: the server failed, crashed or did not answer in time.
    pub(crate) async fn call(&self, tool: &str, args: &Value) -> Result<Value, String> {
        let peer = self.peer().await?;
        let limit = Duration::from_secs(self.config.timeout_seconds.max(1));
        let outcome = tokio::time::timeout(limit, peer.call_tool(tool, args)).await;
        let error = match outcome {
            Ok(Ok(result)) => return Ok(result),
            Ok(Err(e)) => format!("failed during the call: {e}{}", self.stderr_tail()),
            Err(_) => format!("did not answer within {} s", limit.as_secs()),
        };
        // Drop the connection (a child process is killed); the next call starts it again.
        if let Some(service) = self.conn.lock().await.take() {
            service.close().await;
        }
        self.fail(error.clone());
        Err(format!(
            "MCP server '{}' {error}; LurkBot restarts it on a later call",
            self.name
        ))
    }

    /// Closes the connection (a child process is asked to stop, then killed).
    pub(crate) async fn shutdown(&self) {
        if let Some(service) = self.conn.lock().await.take() {
            service.close().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_stderr_is_shown_with_secret_values_masked() {
        let slot = Slot::new(
            "calc".into(),
            McpServerConfig::default(),
            Ok(Vec::new()),
            PathBuf::from("/"),
            lurkbot_term::Redactor::new(vec!["tok-7d1e93".to_string()]),
        );
        if let Ok(mut tail) = slot.stderr.lock() {
            tail.extend(b"auth failed for tok-7d1e93\n");
        }
        let shown = slot.stderr_tail();
        assert!(shown.contains("auth failed for"), "{shown}");
        assert!(!shown.contains("tok-7d1e93"), "{shown}");
        // An HTTP endpoint's refusal echoing the secret is masked in the status and the log.
        slot.fail("HTTP 401: bad token tok-7d1e93".into());
        let error = slot.status().error.unwrap_or_default();
        assert!(
            error.contains("HTTP 401") && !error.contains("tok-7d1e93"),
            "{error}"
        );
    }
}
