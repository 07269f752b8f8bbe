//! What a command is: the [`Command`] trait, the context it runs in, its [`Outcome`] or
//! [`CommandError`], and the [`Registry`] that maps names to commands.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use lurkbot_core::{Config, Home, SessionKey};
use serde_json::{Map, Value};

use crate::{Artifact, CommandSpec, ErrorCode, Progress};

/// The future a command returns.
pub type CommandFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Outcome, CommandError>> + Send + 'a>>;

/// A built-in command of `terminal_exec`.
pub trait Command: Send + Sync {
    /// The static description: name, usage, flags, examples.
    fn spec(&self) -> &'static CommandSpec;

    /// Runs the command. `args` are the tokens after the command name (help forms never reach
    /// here: the executor answers them from [`Command::spec`]).
    fn run<'a>(&'a self, ctx: &'a CommandCtx<'a>, args: &'a [String]) -> CommandFuture<'a>;
}

/// Set when a run is cancelled (timeout); long-running work checks it between steps.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// Asks the command to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether cancellation was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Everything a command may use.
pub struct CommandCtx<'a> {
    /// The LurkBot home all paths are relative to.
    pub home: &'a Home,
    /// The session the run belongs to.
    pub session: &'a SessionKey,
    /// Text given as the tool's `stdin` (never logged).
    pub stdin: Option<&'a str>,
    /// The run id.
    pub run_id: &'a str,
    /// The registry the command was found in (for `help`).
    pub registry: &'a Registry,
    /// Set when the run times out.
    pub cancel: CancelFlag,
    /// Where long operations report progress (nowhere unless the front end attached a sink).
    pub progress: Progress,
    config: OnceLock<Result<Config, lurkbot_core::ConfigError>>,
}

impl<'a> CommandCtx<'a> {
    /// A context for one run.
    pub fn new(
        home: &'a Home,
        session: &'a SessionKey,
        stdin: Option<&'a str>,
        run_id: &'a str,
        registry: &'a Registry,
    ) -> Self {
        Self {
            home,
            session,
            stdin,
            run_id,
            registry,
            cancel: CancelFlag::default(),
            progress: Progress::none(),
            config: OnceLock::new(),
        }
    }

    /// Attaches a progress handle (builder style).
    #[must_use]
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// `config.toml`, read on first use.
    ///
    /// # Errors
    /// `ConfigInvalid` naming the file, line and key.
    pub fn config(&self) -> Result<&Config, CommandError> {
        self.config
            .get_or_init(|| Config::load(&self.home.config_path()))
            .as_ref()
            .map_err(|e| {
                CommandError::new(ErrorCode::ConfigInvalid, e.to_string())
                    .with_hint("fix the file by hand or with 'lurkbot config set', then retry")
            })
    }
}

/// A successful run.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Human-readable summary.
    pub stdout: String,
    /// Warnings.
    pub stderr: String,
    /// Structured result; `ok` and `command` are filled in by the executor when absent.
    pub result: Map<String, Value>,
    /// Files written by the run.
    pub artifacts: Vec<Artifact>,
}

/// A failed run: a stable code, a message, what to do next, and command-specific fields that
/// go into `result`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandError {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
    /// What to do next (printed on stderr).
    pub hint: Option<String>,
    /// Extra `result` fields (e.g. `http_status`), in order.
    pub details: Vec<(String, Value)>,
}

impl CommandError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: None,
            details: Vec::new(),
        }
    }

    /// Adds what to do next.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds a `result` field.
    #[must_use]
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.push((key.into(), value.into()));
        self
    }
}

impl From<lurkbot_core::PathError> for CommandError {
    fn from(e: lurkbot_core::PathError) -> Self {
        let code = match e {
            lurkbot_core::PathError::Escapes { .. } => ErrorCode::PathEscapesAgentsRoot,
            _ => ErrorCode::InvalidArgs,
        };
        Self::new(code, e.to_string())
    }
}

impl From<lurkbot_core::AccessError> for CommandError {
    fn from(e: lurkbot_core::AccessError) -> Self {
        match e {
            lurkbot_core::AccessError::Path(p) => p.into(),
            protected => Self::new(ErrorCode::PermissionDenied, protected.to_string())
                .with_hint("choose a path under workspace/ or artifacts/; LurkBot's secrets and state are never read or written by commands"),
        }
    }
}

/// The commands `terminal_exec` knows, in registration order.
#[derive(Default)]
pub struct Registry {
    commands: Vec<Box<dyn Command>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a command (builder style).
    #[must_use]
    pub fn with(mut self, command: impl Command + 'static) -> Self {
        self.commands.push(Box::new(command));
        self
    }

    /// The command registered under `name` (already lower-cased by the caller).
    pub fn get(&self, name: &str) -> Option<&dyn Command> {
        self.commands
            .iter()
            .find(|c| c.spec().name == name)
            .map(|c| c.as_ref())
    }

    /// Specs of every command, in registration order.
    pub fn specs(&self) -> impl Iterator<Item = &'static CommandSpec> + '_ {
        self.commands.iter().map(|c| c.spec())
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.specs().map(|s| s.name))
            .finish()
    }
}
