//! Approvals: tool calls that wait for a human decision before they run (ARCHITECTURE.md §5).
//!
//! What needs one comes from `[approvals]`: every `terminal_exec` command carrying `--confirm`
//! (`confirm = true`, the default), tools matching `tools = […]`, and terminal commands starting
//! with one of `commands = […]` (word by word: `"irc send"` matches `irc send --to …`). The run
//! pauses as `approval_pending` until an [`Approver`] answers allow-once, allow-always or deny.
//!
//! allow-always is remembered in `exec-approvals.json` at the home root (atomically written):
//! for `terminal_exec` the command and its subcommand (`terminal_exec:cal delete-event`), for
//! other tools the tool name. A denied call becomes a tool error the model sees; the run goes on.
//!
//! One [`Approvals`] serves every session of a process (the gateway's session host lends its
//! own to each agent), and the file is the shared truth between processes: it is read again
//! when it changed on disk, and a new decision is merged into what the file holds, never
//! written over it. With the home's state in PostgreSQL the file is the store's document of the
//! same name (ARCHITECTURE.md §6.3): read again when its version moved, a decision added in one
//! transaction — an allow-always given through one gateway holds on every one.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;
use std::time::SystemTime;

use lurkbot_core::{ApprovalsConfig, Home, write_atomic};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AgentError;
use crate::tool_names::matches;

/// The file holding allow-always decisions.
pub use lurkbot_core::APPROVALS_FILE;

/// A call waiting for a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    /// The tool call id.
    pub id: String,
    /// The session key.
    pub session: String,
    /// The tool.
    pub tool: String,
    /// What will run (the command line, or the tool's arguments).
    pub summary: String,
    /// Why it needs approval.
    pub reason: String,
    /// What allow-always remembers.
    pub key: String,
    /// Decided for this act alone: allow-always is not offered, and counts as allow-once.
    pub once: bool,
}

/// A human's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Run this call.
    AllowOnce,
    /// Run it, and every later call with the same key.
    AllowAlways,
    /// Do not run it.
    Deny,
}

impl std::str::FromStr for Decision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "allow-once" | "once" | "y" | "yes" => Ok(Self::AllowOnce),
            "allow-always" | "always" | "a" => Ok(Self::AllowAlways),
            "deny" | "n" | "no" | "" => Ok(Self::Deny),
            other => Err(format!(
                "unknown decision '{other}' (allow-once, allow-always, deny)"
            )),
        }
    }
}

/// A boxed decision future.
pub type DecisionFuture<'a> = Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;

/// Whoever answers approval requests (the terminal, the gateway's clients).
pub trait Approver: Send + Sync {
    /// Waits for the decision on `request`.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a>;
}

/// Asks `approver` for its decision on `request`, counting the answer and the wait in the
/// metrics (ARCHITECTURE.md §6.4).
pub(crate) async fn ask(approver: &dyn Approver, request: &ApprovalRequest) -> Decision {
    use lurkbot_core::metrics::{APPROVAL_WAIT_SECONDS, APPROVALS};
    let started = std::time::Instant::now();
    let decision = approver.decide(request).await;
    let outcome = match decision {
        Decision::AllowOnce => "allow-once",
        Decision::AllowAlways => "allow-always",
        Decision::Deny => "deny",
    };
    APPROVALS.inc(&[outcome]);
    APPROVAL_WAIT_SECONDS.observe(&[], started.elapsed().as_secs_f64());
    decision
}

/// Denies everything: used when no human is attached.
pub struct NoHuman;

impl Approver for NoHuman {
    fn decide<'a>(&'a self, _request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin(async { Decision::Deny })
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Remembered {
    allow: Vec<String>,
}

/// The remembered decisions and the version of the file they were read from.
#[derive(Debug, Default)]
struct Loaded {
    remembered: Remembered,
    /// Modification time and length of the file when it was last read or written.
    version: Option<(SystemTime, u64)>,
    /// The shared store's document version they were read at, on PostgreSQL.
    shared_version: Option<i64>,
}

impl Loaded {
    fn read(path: &Path) -> Self {
        let version = file_version(path);
        let remembered = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            remembered,
            version,
            shared_version: None,
        }
    }

    /// Reads the file again when it changed since it was last seen.
    fn refresh(&mut self, path: &Path) {
        if file_version(path) != self.version {
            *self = Self::read(path);
        }
    }
}

fn file_version(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The approval rules of one home.
pub struct Approvals {
    config: ApprovalsConfig,
    path: PathBuf,
    home: Home,
    loaded: Mutex<Loaded>,
}

impl Approvals {
    /// The rules of `config`, with the decisions remembered in `home`.
    pub fn new(home: &Home, config: ApprovalsConfig) -> Self {
        let path = home.join(APPROVALS_FILE);
        let loaded = Loaded::read(&path);
        Self {
            config,
            path,
            home: home.clone(),
            loaded: Mutex::new(loaded),
        }
    }

    /// The request for a call that needs a decision, or `None` when it may run.
    pub fn check(
        &self,
        session: &str,
        id: &str,
        tool: &str,
        args: &Value,
    ) -> Option<ApprovalRequest> {
        let tool = tool.to_ascii_lowercase();
        let (summary, key, reason) = if tool == "terminal_exec" {
            let command = args.get("command").and_then(Value::as_str).unwrap_or("");
            let words = lurkbot_term::parse_command(command).unwrap_or_default();
            let key = format!("terminal_exec:{}", command_key(&words));
            let reason = if self.config.confirm && words.iter().any(|w| w == "--confirm") {
                Some("the command carries --confirm".to_string())
            } else if let Some(prefix) = self
                .config
                .commands
                .iter()
                .find(|p| starts_with_words(&words, p))
            {
                Some(format!("commands starting with '{prefix}' need approval"))
            } else if self.config.tools.iter().any(|p| matches(p, &tool)) {
                Some("terminal_exec needs approval".to_string())
            } else {
                None
            };
            (command.to_string(), key, reason?)
        } else {
            let pattern = self.config.tools.iter().find(|p| matches(p, &tool))?;
            let summary: String = args.to_string().chars().take(500).collect();
            (
                summary,
                tool.clone(),
                format!("tool '{pattern}' needs approval"),
            )
        };
        if self.is_remembered(&key) {
            return None;
        }
        Some(ApprovalRequest {
            id: id.to_string(),
            session: session.to_string(),
            tool,
            summary,
            reason,
            key,
            once: false,
        })
    }

    /// Whether an allow-always decision covers `key`.
    pub fn is_remembered(&self, key: &str) -> bool {
        self.loaded.lock().is_ok_and(|mut loaded| {
            match lurkbot_state::shared::of(&self.home) {
                Some(store) => {
                    let version = store.document_version(APPROVALS_FILE).ok().flatten();
                    if version != loaded.shared_version {
                        loaded.remembered = store
                            .document(APPROVALS_FILE)
                            .ok()
                            .flatten()
                            .and_then(|text| serde_json::from_str(&text).ok())
                            .unwrap_or_default();
                        loaded.shared_version = version;
                    }
                }
                None => loaded.refresh(&self.path),
            }
            loaded.remembered.allow.iter().any(|k| k == key)
        })
    }

    /// Remembers an allow-always decision.
    ///
    /// # Errors
    /// `Store` when the file cannot be written (the decision still applies to this call).
    pub fn remember(&self, key: &str) -> Result<(), AgentError> {
        let mut loaded = self
            .loaded
            .lock()
            .map_err(|_| AgentError::Poisoned("approvals"))?;
        if let Some(store) = lurkbot_state::shared::of(&self.home) {
            let key = key.to_string();
            let ((), remembered) = store.edit_value(
                APPROVALS_FILE,
                |text| {
                    Ok(text
                        .and_then(|text| serde_json::from_str::<Remembered>(&text).ok())
                        .unwrap_or_default())
                },
                move |remembered| {
                    if !remembered.allow.contains(&key) {
                        remembered.allow.push(key);
                    }
                    Ok(())
                },
                |remembered| {
                    serde_json::to_string_pretty(remembered).map_err(|source| AgentError::Encode {
                        what: APPROVALS_FILE,
                        source,
                    })
                },
            )??;
            loaded.remembered = remembered;
            loaded.shared_version = None;
            return Ok(());
        }
        // Merge into what the file holds now: another process may have added its own.
        *loaded = Loaded::read(&self.path);
        if loaded.remembered.allow.iter().any(|k| k == key) {
            return Ok(());
        }
        loaded.remembered.allow.push(key.to_string());
        let bytes =
            serde_json::to_vec_pretty(&loaded.remembered).map_err(|source| AgentError::Encode {
                what: APPROVALS_FILE,
                source,
            })?;
        write_atomic(&self.path, &bytes)?;
        loaded.version = file_version(&self.path);
        Ok(())
    }
}

/// The command and its subcommand (flags and values after them do not count).
fn command_key(words: &[String]) -> String {
    let mut key: Vec<&str> = Vec::new();
    for word in words.iter().take(2) {
        if word.starts_with('-') {
            break;
        }
        key.push(word);
    }
    key.join(" ")
}

fn starts_with_words(words: &[String], prefix: &str) -> bool {
    let prefix: Vec<&str> = prefix.split_whitespace().collect();
    !prefix.is_empty()
        && prefix.len() <= words.len()
        && prefix
            .iter()
            .zip(words)
            .all(|(p, w)| p.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approvals(config: ApprovalsConfig) -> (tempfile::TempDir, Approvals) {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::open(dir.path()).expect("home");
        let a = Approvals::new(&home, config);
        (dir, a)
    }

    #[test]
    fn confirm_flag_prefixes_and_tools() {
        let config = ApprovalsConfig {
            confirm: true,
            tools: vec!["write".into()],
            commands: vec!["irc send".into()],
        };
        let (_dir, a) = approvals(config);
        let exec = |c: &str| a.check("s", "1", "terminal_exec", &json!({"command": c}));
        assert!(exec("rss list").is_none());
        let r = exec("cal delete-event --id 3 --confirm").expect("needs approval");
        assert_eq!(r.key, "terminal_exec:cal delete-event");
        assert!(r.reason.contains("--confirm"));
        assert!(exec("irc send --to '#a' hi").is_some());
        assert!(exec("irc sendx").is_none());
        assert!(a.check("s", "2", "write", &json!({"path": "x"})).is_some());
        assert!(a.check("s", "2", "read", &json!({"path": "x"})).is_none());
    }

    #[test]
    fn allow_always_is_persisted_per_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::open(dir.path()).expect("home");
        let a = Approvals::new(&home, ApprovalsConfig::default());
        let args = json!({"command": "cal delete-event --id 3 --confirm"});
        a.remember("terminal_exec:cal delete-event").expect("saved");
        assert!(a.check("s", "1", "terminal_exec", &args).is_none());
        let again = Approvals::new(&home, ApprovalsConfig::default());
        assert!(again.check("s", "1", "terminal_exec", &args).is_none());
        let other = json!({"command": "cal update-event --id 3 --title x --confirm"});
        assert!(again.check("s", "1", "terminal_exec", &other).is_some());
        let off = Approvals::new(
            &home,
            ApprovalsConfig {
                confirm: false,
                ..ApprovalsConfig::default()
            },
        );
        assert!(off.check("s", "1", "terminal_exec", &other).is_none());
    }

    #[test]
    fn rules_loaded_earlier_see_later_decisions_and_never_drop_them() {
        // Two processes (or two rule sets) on one home, both loaded before either decides.
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::open(dir.path()).expect("home");
        let first = Approvals::new(&home, ApprovalsConfig::default());
        let second = Approvals::new(&home, ApprovalsConfig::default());
        let create = json!({"command": "cal create-event --title x --confirm"});
        first
            .remember("terminal_exec:cal create-event")
            .expect("saved");
        assert!(second.check("s", "1", "terminal_exec", &create).is_none());
        second
            .remember("terminal_exec:cal delete-event")
            .expect("saved");
        let saved = std::fs::read_to_string(home.join(APPROVALS_FILE)).expect("file");
        assert!(saved.contains("cal create-event") && saved.contains("cal delete-event"));
        let delete = json!({"command": "cal delete-event --id 1 --confirm"});
        assert!(first.check("s", "1", "terminal_exec", &delete).is_none());
    }

    #[test]
    fn decisions_parse() {
        assert_eq!("allow-always".parse(), Ok(Decision::AllowAlways));
        assert_eq!("y".parse(), Ok(Decision::AllowOnce));
        assert_eq!("".parse(), Ok(Decision::Deny));
        assert!("maybe".parse::<Decision>().is_err());
    }
}
