//! What a command is: the [`Command`] trait, the context it runs in, its [`Outcome`] or
//! [`CommandError`], and the [`Registry`] that maps names to commands.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use lurkbot_core::{Config, Home, SessionKey};
use serde_json::{Map, Value};

use crate::{Artifact, CommandSpec, ErrorCode, ParsedArgs, Progress};

/// The future a command returns.
pub type CommandFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Outcome, CommandError>> + Send + 'a>>;

/// A built-in command of `terminal_exec`.
pub trait Command: Send + Sync {
    /// The static description: name, usage, flags, examples.
    fn spec(&self) -> &'static CommandSpec;

    /// Runs the command. `args` are the tokens after the command name (help forms never reach
    /// here: the executor answers them from [`Command::spec`]).
    ///
    /// The default serves commands with subcommands: the first token picks the
    /// [`SubcommandSpec`](crate::SubcommandSpec), the rest is parsed against its flags, and its
    /// own `run` gets the result. There is no fallback arm: a name the spec does not list is
    /// refused, whatever the command.
    fn run<'a>(&'a self, ctx: &'a CommandCtx<'a>, args: &'a [String]) -> CommandFuture<'a> {
        let spec = self.spec();
        let (name, rest) = crate::args::split_subcommand(args);
        let Some(sub) = spec.subcommand(name) else {
            let names: Vec<&str> = spec.subcommands.iter().map(|s| s.name).collect();
            let error = CommandError::new(
                ErrorCode::InvalidArgs,
                format!("unknown subcommand '{name}' for {}", spec.name),
            )
            .with_hint(format!("subcommands: {}", names.join(", ")));
            return Box::pin(async move { Err(error) });
        };
        match ParsedArgs::parse(sub.flags, sub.usage, rest) {
            Ok(parsed) => (sub.run)(ctx, parsed),
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
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
    /// The gateway's IRC connections (`None` in-process: `irc` then answers `GatewayRequired`).
    pub irc: Option<std::sync::Arc<crate::IrcSessions>>,
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
            irc: None,
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

    /// An `IoError` naming what was being done to which (home-relative) path, with the usual
    /// fix.
    pub fn io(action: &str, path: &str, e: &std::io::Error) -> Self {
        Self::new(ErrorCode::IoError, format!("cannot {action} '{path}': {e}"))
            .with_hint("check free space and permissions, then retry")
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
            lurkbot_core::PathError::Escapes { .. }
            | lurkbot_core::PathError::AbsoluteInside { .. } => ErrorCode::PathEscapesAgentsRoot,
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

#[cfg(test)]
mod dispatch_tests {
    use super::*;

    /// Every built-in command with subcommands, called directly (past the executor's own
    /// check): a name its spec does not list is refused, never run as some other subcommand.
    #[tokio::test]
    async fn an_unlisted_subcommand_is_never_dispatched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::open(dir.path()).expect("home");
        let session = SessionKey::main();
        let registry = crate::default_registry();
        let ctx = CommandCtx::new(&home, &session, None, "run_test", &registry);
        let mut checked = 0;
        for spec in registry.specs() {
            let name = spec.name;
            let Some(command) = registry.get(name) else {
                continue;
            };
            if command.spec().subcommands.is_empty() {
                continue;
            }
            let args = vec!["no-such-subcommand".to_string(), "--confirm".to_string()];
            let outcome = command.run(&ctx, &args).await;
            let Err(error) = outcome else {
                panic!("{name} ran an unlisted subcommand");
            };
            assert_eq!(error.code, ErrorCode::InvalidArgs, "{name}");
            assert!(
                error.message.contains("no-such-subcommand"),
                "{name}: {}",
                error.message
            );
            checked += 1;
        }
        assert!(checked >= 4, "only {checked} commands with subcommands");
    }
}
