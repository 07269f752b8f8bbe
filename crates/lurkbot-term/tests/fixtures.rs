//! Test commands and a temp-home harness.

use lurkbot_core::Home;
use lurkbot_term::{
    Command, CommandCtx, CommandError, CommandFuture, CommandSpec, Envelope, ExecRequest, FlagSpec,
    Outcome, ParsedArgs, Registry, SubcommandSpec, TerminalExec, output,
};
use serde_json::json;

pub static ECHO: CommandSpec = CommandSpec {
    name: "echo",
    summary: "prints its arguments and stdin",
    usage: "echo [<text>]",
    subcommands: &[],
    flags: &[
        FlagSpec::positional("<text>", false, "text to print"),
        FlagSpec::switch("--stdin", "print stdin too"),
        FlagSpec::switch("--config", "print the gateway port from config.toml"),
    ],
    examples: &["echo hi"],
    skill: "test",
    credentials: &[],
    needs_gateway: false,
};

pub struct Echo;
impl Command for Echo {
    fn spec(&self) -> &'static CommandSpec {
        &ECHO
    }
    fn run<'a>(&'a self, ctx: &'a CommandCtx<'a>, args: &'a [String]) -> CommandFuture<'a> {
        Box::pin(async move {
            let p = ParsedArgs::parse(ECHO.flags, ECHO.usage, args)?;
            let mut stdout = p.get("<text>").unwrap_or("").to_string();
            if p.has("--config") {
                stdout.push_str(&ctx.config()?.gateway.port.to_string());
            }
            if p.has("--stdin") {
                stdout.push_str(ctx.stdin.unwrap_or(""));
            }
            let mut result = serde_json::Map::new();
            result.insert("text".into(), stdout.clone().into());
            Ok(Outcome {
                stdout,
                result,
                ..Outcome::default()
            })
        })
    }
}

pub static SLOW: CommandSpec = CommandSpec {
    name: "slow",
    summary: "sleeps, checking for cancellation",
    usage: "slow",
    subcommands: &[],
    flags: &[],
    examples: &[],
    skill: "test",
    credentials: &[],
    needs_gateway: false,
};

pub struct Slow;
impl Command for Slow {
    fn spec(&self) -> &'static CommandSpec {
        &SLOW
    }
    fn run<'a>(&'a self, _ctx: &'a CommandCtx<'a>, _args: &'a [String]) -> CommandFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            Ok(Outcome::default())
        })
    }
}

const MAKE_FLAGS: &[FlagSpec] = &[
    FlagSpec::value("--out", "path", true, "where to write"),
    FlagSpec::switch("--confirm", "confirm"),
    FlagSpec::switch("--overwrite", "overwrite"),
];

pub static ARCHIVE: CommandSpec = CommandSpec {
    name: "archive",
    summary: "a command with subcommands",
    usage: "archive <list|make> …",
    subcommands: &[
        SubcommandSpec {
            name: "list",
            summary: "lists",
            usage: "archive list [--big]",
            flags: &[FlagSpec::switch("--big", "print a lot")],
            examples: &["archive list"],
            run: |_, p| {
                Box::pin(async move {
                    Ok(Outcome {
                        stdout: "x".repeat(if p.has("--big") { 20_000 } else { 3 }),
                        ..Outcome::default()
                    })
                })
            },
        },
        SubcommandSpec {
            name: "make",
            summary: "makes",
            usage: "archive make --out <path> --confirm [--overwrite]",
            flags: MAKE_FLAGS,
            examples: &[],
            run: |ctx, p| Box::pin(async move { make(ctx, &p) }),
        },
    ],
    flags: &[],
    examples: &["archive list"],
    skill: "test",
    credentials: &[],
    needs_gateway: false,
};

fn make(ctx: &CommandCtx<'_>, p: &ParsedArgs) -> Result<Outcome, CommandError> {
    p.require_confirm("archive make")?;
    let out = output::OutFile::from_args(p, "--out")
        .ok_or_else(|| CommandError::new(lurkbot_term::ErrorCode::InvalidArgs, "no --out"))?;
    let artifact = output::write_json_out(ctx, &out, &json!({"made": true}), "test product")?;
    Ok(Outcome {
        artifacts: vec![artifact],
        ..Outcome::default()
    })
}

/// A command with subcommands, dispatched by the default `Command::run`.
pub struct Archive;
impl Command for Archive {
    fn spec(&self) -> &'static CommandSpec {
        &ARCHIVE
    }
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub exec: TerminalExec,
}

impl Harness {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(&dir.path().join("home")).unwrap();
        let registry = Registry::new().with(Echo).with(Slow).with(Archive);
        Self {
            exec: TerminalExec::new(home, registry),
            dir,
        }
    }

    /// A harness over the built-in commands (zip, tar, …).
    pub fn builtin() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(&dir.path().join("home")).unwrap();
        Self {
            exec: TerminalExec::new(home, lurkbot_term::default_registry()),
            dir,
        }
    }

    /// Built-in commands in a home whose network policy allows private addresses, for tests
    /// that serve feeds on loopback (`[network] allow_private = true`).
    pub fn lan() -> Self {
        let h = Self::builtin();
        h.write("config.toml", b"[network]\nallow_private = true\n");
        h
    }

    /// A path inside the home.
    pub fn path(&self, rel: &str) -> std::path::PathBuf {
        self.home().join(rel)
    }

    /// Writes a file inside the home, creating folders.
    pub fn write(&self, rel: &str, bytes: &[u8]) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    pub fn home(&self) -> &std::path::Path {
        self.exec.home().root()
    }

    pub async fn run(&self, command: &str) -> Envelope {
        self.exec.run(ExecRequest::new(command)).await
    }

    pub async fn run_req(&self, req: ExecRequest) -> Envelope {
        self.exec.run(req).await
    }

    /// The audit record of a run, parsed.
    pub fn audit(&self, env: &Envelope) -> serde_json::Value {
        let p = self
            .home()
            .join("artifacts/terminal_exec/runs")
            .join(format!("{}.json", env.run_id));
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    }

    /// Every audit file's text, concatenated.
    pub fn all_audit_text(&self) -> String {
        let dir = self.home().join("artifacts/terminal_exec/runs");
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect()
    }
}
