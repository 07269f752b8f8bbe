//! `lurkbot exec`: one terminal_exec command, in-process.

use crate::error::{CliError, CliResult};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use lurkbot_core::{Home, RunningGateway, SessionKey};
use lurkbot_term::{ExecRequest, Progress, TerminalExec, default_registry};

/// Flags of `lurkbot exec`.
#[derive(Debug, Args)]
#[command(
    after_help = "The exit status is the envelope's exit_code: 0 ok, 1 failure while working, \
2 refused request, 124 timeout, 127 unknown command.\n\nExamples:\n  lurkbot exec help\n  lurkbot exec --json \"help --out artifacts/help.json\""
)]
pub(crate) struct ExecArgs {
    /// Print the whole envelope as one JSON object instead of stdout/stderr (and no progress
    /// bar; one is drawn on an interactive stderr for long archive work otherwise).
    #[arg(long)]
    json: bool,
    /// Session the run belongs to.
    #[arg(long, value_name = "KEY", default_value = "agent:main:main")]
    session: String,
    /// Text passed to the command as its stdin (never logged).
    #[arg(long, value_name = "TEXT", conflicts_with = "stdin_file")]
    stdin: Option<String>,
    /// Read the command's stdin from a file, or from standard input with `-`.
    #[arg(long, value_name = "PATH|-")]
    stdin_file: Option<PathBuf>,
    /// Cancel the command after this many milliseconds (exit 124, Timeout).
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// Run inside a gateway's session host (ws://HOST:PORT/ws; default LURKBOT_GATEWAY_URL),
    /// which keeps per-session connections alive; the token is LURKBOT_GATEWAY_TOKEN or
    /// gateway.token.
    #[arg(long, value_name = "URL")]
    gateway: Option<String>,
    /// The command, as one quoted string, e.g. "zip list --in workspace/a.zip".
    #[arg(value_name = "COMMAND", allow_hyphen_values = true)]
    command: String,
    /// Words after the command are refused, not joined: the shell already split them, and
    /// joining them back could change what was quoted (`"a b.zip"` would become two words).
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    stray: Vec<String>,
}

pub(crate) fn run(home_path: &Path, args: ExecArgs) -> CliResult {
    if !args.stray.is_empty() {
        let words = std::iter::once(args.command.as_str())
            .chain(args.stray.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        return Err(CliError::usage(
            "exec",
            format!(
                "give the command as one quoted argument: lurkbot exec \"{words}\" (words after it are not joined: your shell split them, and joining could change what was quoted)"
            ),
        ));
    }
    let session = SessionKey::parse(&args.session)?;
    let stdin = match (&args.stdin, &args.stdin_file) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading standard input")?;
            Some(text)
        }
        (None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --stdin-file {}", path.display()))?,
        ),
        (None, None) => None,
    };
    let home = Home::open(home_path)?;
    if let Some(url) = super::remote::gateway_url(args.gateway.as_deref()) {
        return remote(&home, &url, &args, &session, stdin);
    }
    let exec = TerminalExec::new(home.clone(), default_registry());
    // `irc` keeps its connection in the gateway: this home's running gateway runs it (without
    // one, the in-process run answers the checks it can, then GatewayRequired).
    if exec.needs_gateway(&args.command)
        && let Some(addr) = RunningGateway::find(&home).and_then(|g| g.loopback_addr())
        && std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(1)).is_ok()
    {
        return remote(&home, &format!("http://{addr}/"), &args, &session, stdin);
    }
    let request = ExecRequest {
        command: args.command,
        stdin,
        timeout_ms: args.timeout_ms,
        session,
        progress: if !args.json && std::io::stderr().is_terminal() {
            Progress::new(Arc::new(crate::progress::TerminalProgress::new(
                crate::progress::show_after_from_env(),
            )))
        } else {
            Progress::none()
        },
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let envelope = runtime.block_on(exec.run(request));
    print(args.json, &envelope)
}

/// Runs the command in the gateway's session host.
fn remote(
    home: &Home,
    url: &str,
    args: &ExecArgs,
    session: &SessionKey,
    stdin: Option<String>,
) -> CliResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let token = super::remote::gateway_token(home);
    let answer = runtime.block_on(async {
        let mut gw = super::remote::Remote::connect(url, token.as_deref()).await?;
        gw.call(
            lurkbot_gateway::protocol::method::TERMINAL_EXEC,
            serde_json::json!({"command": args.command, "stdin": stdin,
                "timeoutMs": args.timeout_ms, "sessionKey": session.as_str()}),
        )
        .await
    });
    match answer {
        Ok(Ok(payload)) => {
            let envelope: lurkbot_term::Envelope = serde_json::from_value(payload)
                .context("the gateway answered with something that is not an envelope")?;
            print(args.json, &envelope)
        }
        Ok(Err((code, message))) => Err(CliError::usage(
            "exec",
            format!("the gateway refused: {code}: {message}"),
        )),
        Err(e) => Err(CliError::failed("exec", format!("{e:#}"))),
    }
}

fn print(json: bool, envelope: &lurkbot_term::Envelope) -> CliResult {
    if json {
        let mut line = serde_json::to_string(envelope)?;
        line.push('\n');
        crate::run::print_stdout(&line)?;
    } else {
        crate::run::print_stdout(&envelope.stdout)?;
        eprint!("{}", envelope.stderr);
    }
    crate::error::status(u8::try_from(envelope.exit_code).unwrap_or(1))
}
