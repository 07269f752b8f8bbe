//! The executor: parse, refuse, dispatch, time out, redact, cap, audit — the same steps for
//! every run, refused ones included.

use std::time::{Duration, Instant};

use lurkbot_core::{Home, Secrets, SessionKey};
use serde_json::{Map, Value};

use crate::audit::{AuditRecord, write_audit};
use crate::envelope::{STDERR_CAP, STDOUT_CAP, cap_text};
use crate::redact::{Redactor, mask_argv, mask_command_text};
use crate::{
    Artifact, CommandCtx, CommandError, Envelope, ErrorCode, Outcome, Progress, Registry, help,
    parser,
};

/// One `terminal_exec` call.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The command string.
    pub command: String,
    /// Text for the command's stdin (never logged).
    pub stdin: Option<String>,
    /// Cancel the command after this long (`Timeout`, exit 124).
    pub timeout_ms: Option<u64>,
    /// The session the run belongs to.
    pub session: SessionKey,
    /// Where long operations report progress (a terminal front end attaches a bar).
    pub progress: Progress,
}

impl ExecRequest {
    /// A request for `command` in the main session, without stdin or timeout.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            stdin: None,
            timeout_ms: None,
            session: SessionKey::main(),
            progress: Progress::none(),
        }
    }
}

/// Runs commands of a registry inside one home.
#[derive(Debug)]
pub struct TerminalExec {
    home: Home,
    registry: Registry,
    irc: Option<std::sync::Arc<crate::IrcSessions>>,
}

impl TerminalExec {
    /// An executor over `registry` in `home`.
    pub fn new(home: Home, registry: Registry) -> Self {
        Self {
            home,
            registry,
            irc: None,
        }
    }

    /// Whether `command` names a command that needs the gateway's session host (`irc`).
    pub fn needs_gateway(&self, command: &str) -> bool {
        command
            .split_whitespace()
            .next()
            .and_then(|name| self.registry.get(&name.to_ascii_lowercase()))
            .is_some_and(|c| c.spec().needs_gateway)
    }

    /// Lends the gateway's IRC connections to the `irc` command (builder style).
    #[must_use]
    pub fn with_irc(mut self, irc: std::sync::Arc<crate::IrcSessions>) -> Self {
        self.irc = Some(irc);
        self
    }

    /// The home.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Runs one request and returns its envelope. Never fails: every problem is an envelope
    /// with an error code, and every run leaves an audit record.
    pub async fn run(&self, request: ExecRequest) -> Envelope {
        let started = Instant::now();
        let timestamp_ms = lurkbot_core::now_ms();
        let run_id = lurkbot_core::new_run_id();
        let (argv, label, outcome) = self.dispatch(&request, &run_id).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let redactor = Redactor::new(Secrets::load(&self.home).redaction_values());
        let mut envelope = build_envelope(run_id, argv, &label, outcome, duration_ms, &redactor);
        let command = redactor.text(&mask_command_text(&request.command));
        let record = AuditRecord {
            run_id: &envelope.run_id,
            timestamp_ms,
            session: request.session.as_str(),
            command: &command,
            argv: &envelope.argv,
            exit_code: envelope.exit_code,
            duration_ms,
            stdout: &envelope.stdout,
            stderr: &envelope.stderr,
            error_code: envelope.error_code.as_deref(),
            error_message: envelope.error_message.as_deref(),
            result: &envelope.result,
            artifacts: &envelope.artifacts,
        };
        if let Err(e) = write_audit(&self.home, &record) {
            envelope.stderr.push_str(&format!(
                "warning: the audit record could not be written: {e}\n"
            ));
        }
        envelope
    }

    /// Parses and runs; returns masked argv, the command label for `result.command` and the
    /// outcome.
    async fn dispatch(
        &self,
        request: &ExecRequest,
        run_id: &str,
    ) -> (Vec<String>, String, Result<Outcome, CommandError>) {
        let argv = match parser::parse_command(&request.command) {
            Ok(argv) => argv,
            Err(e) => {
                let label = first_word(&mask_command_text(&request.command));
                return (
                    Vec::new(),
                    label,
                    Err(CommandError::new(ErrorCode::InvalidCommand, e.0)),
                );
            }
        };
        let masked = mask_argv(&argv);
        let name = argv[0].to_ascii_lowercase();
        if let Some(flag) = parser::sensitive_flag(&argv) {
            let flag = parser::split_sensitive(flag)
                .map_or(flag, |(f, _)| f)
                .trim_end_matches(['=', ':'])
                .to_string();
            let err = CommandError::new(
                ErrorCode::SensitiveArgv,
                format!("'{flag}' would put a secret on the command line, where it would be logged"),
            )
            .with_hint(format!(
                "put credentials in skills/<skill>/secrets/.env (run '{name} --help' to see which skill) and leave the flag out"
            ));
            return (masked, name, Err(err));
        }
        let Some(command) = self.registry.get(&name) else {
            let mut err = CommandError::new(
                ErrorCode::UnknownCommand,
                format!("unknown command '{}'", argv[0]),
            );
            err = match suggest(&name, self.registry.specs().map(|s| s.name)) {
                Some(s) => {
                    err.with_hint(format!("did you mean '{s}'? run 'help' to list commands"))
                }
                None => err.with_hint("run 'help' to list commands"),
            };
            return (masked, name, Err(err));
        };
        let spec = command.spec();
        let args = &argv[1..];
        if let Some(target) = help::help_request(spec, args) {
            let outcome = match target {
                Some(sub) => help::subcommand_help(spec, sub),
                None => help::command_help(spec),
            };
            return (masked, format!("{name} help"), Ok(outcome));
        }
        let label = match args.first() {
            Some(sub) if spec.subcommand(sub).is_some() => format!("{name} {sub}"),
            _ => name.clone(),
        };
        if !spec.subcommands.is_empty() && args.first().is_none_or(|a| spec.subcommand(a).is_none())
        {
            let names: Vec<&str> = spec.subcommands.iter().map(|s| s.name).collect();
            let what = args.first().map_or("no subcommand given".to_string(), |a| {
                format!("unknown subcommand '{a}'")
            });
            let err = CommandError::new(
                ErrorCode::InvalidArgs,
                format!("{what}; '{name}' takes one of: {}", names.join(", ")),
            )
            .with_hint(format!("run '{name} --help' for usage"));
            return (masked, label, Err(err));
        }
        let mut ctx = CommandCtx::new(
            &self.home,
            &request.session,
            request.stdin.as_deref(),
            run_id,
            &self.registry,
        )
        .with_progress(request.progress.clone());
        ctx.irc.clone_from(&self.irc);
        let run = command.run(&ctx, args);
        let outcome = match request.timeout_ms {
            Some(ms) => match tokio::time::timeout(Duration::from_millis(ms), run).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    ctx.cancel.cancel();
                    Err(CommandError::new(
                        ErrorCode::Timeout,
                        format!("'{label}' did not finish within {ms} ms and was cancelled"),
                    )
                    .with_hint("retry with a larger timeout_ms, or narrow the request")
                    .with_detail("timeout_ms", ms))
                }
            },
            None => run.await,
        };
        (masked, label, outcome)
    }
}

/// Assembles, redacts and caps the envelope.
fn build_envelope(
    run_id: String,
    argv: Vec<String>,
    label: &str,
    outcome: Result<Outcome, CommandError>,
    duration_ms: u64,
    redactor: &Redactor,
) -> Envelope {
    let (exit_code, stdout, stderr, error_code, error_message, mut result, artifacts) =
        match outcome {
            Ok(o) => {
                let mut result = o.result;
                result.entry("ok").or_insert(Value::Bool(true));
                result.entry("command").or_insert_with(|| label.into());
                (0, o.stdout, o.stderr, None, None, result, o.artifacts)
            }
            Err(e) => {
                let mut result = Map::new();
                result.insert("ok".into(), false.into());
                result.insert("command".into(), label.into());
                result.insert("error_code".into(), e.code.as_str().into());
                result.extend(e.details);
                let mut stderr = format!("{}: {}\n", e.code, e.message);
                if let Some(hint) = e.hint {
                    stderr.push_str(&hint);
                    stderr.push('\n');
                }
                (
                    e.code.exit_code(),
                    String::new(),
                    stderr,
                    Some(e.code.as_str().to_string()),
                    Some(e.message),
                    result,
                    Vec::new(),
                )
            }
        };
    let mut result_value = Value::Object(std::mem::take(&mut result));
    redactor.json(&mut result_value);
    Envelope {
        run_id,
        exit_code,
        // Human-readable text: control characters from third-party data never reach a terminal.
        stdout: cap_text(
            &lurkbot_core::printable(&redactor.text(&stdout)),
            STDOUT_CAP,
        ),
        stderr: cap_text(
            &lurkbot_core::printable(&redactor.text(&stderr)),
            STDERR_CAP,
        ),
        duration_ms,
        error_code,
        error_message: error_message.map(|m| redactor.text(&m)),
        result: result_value,
        artifacts: artifacts
            .into_iter()
            .map(|a| Artifact {
                path: redactor.text(&a.path),
                mime: a.mime,
                description: redactor.text(&a.description),
            })
            .collect(),
        argv: argv.iter().map(|a| redactor.text(a)).collect(),
    }
}

/// The first word of an unparsable command, lower-cased and masked, for `result.command`.
fn first_word(raw: &str) -> String {
    raw.split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .take(64)
        .filter(|c| !c.is_control())
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The registered name closest to `name`, for "did you mean": at most one edit (a swap of two
/// neighbours counts as one) for names up to four letters, two for longer ones, so `zpi`
/// suggests `zip` but `ls` does not suggest `rss`.
fn suggest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let allowed = if name.chars().count() <= 4 { 1 } else { 2 };
    names
        .map(|n| (strsim::osa_distance(name, n), n))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod suggest_tests {
    use super::suggest;

    #[test]
    fn only_close_names_are_suggested() {
        let names = ["help", "zip", "tar", "rss", "cal"];
        let pick = |typed: &str| suggest(typed, names.iter().copied());
        assert_eq!(pick("zpi"), Some("zip"));
        assert_eq!(pick("tra"), Some("tar"));
        assert_eq!(pick("hlep"), Some("help"));
        assert_eq!(pick("ls"), None);
        assert_eq!(pick("cat"), Some("cal"));
        assert_eq!(pick("mkdir"), None);
    }
}
