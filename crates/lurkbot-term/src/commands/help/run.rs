//! The work of `help`.

use serde_json::{Map, Value, json};

use super::SPEC;
use crate::output::OutFile;
use crate::{CommandCtx, CommandError, ErrorCode, Outcome, ParsedArgs, help, output};

/// `help`'s flags, built once.
#[derive(Debug, Clone)]
struct HelpArgs {
    /// `<command>`: show this one command.
    command: Option<String>,
    /// `--out` with its replace switches.
    out: Option<OutFile>,
}

impl HelpArgs {
    fn from_args(args: &[String]) -> Result<Self, CommandError> {
        let parsed = ParsedArgs::parse(SPEC.flags, SPEC.usage, args)?;
        Ok(Self {
            command: parsed.get("<command>").map(str::to_string),
            out: OutFile::from_args(&parsed, "--out"),
        })
    }
}

pub(super) fn run(ctx: &CommandCtx<'_>, args: &[String]) -> Result<Outcome, CommandError> {
    let args = HelpArgs::from_args(args)?;
    if let Some(name) = &args.command {
        let lowered = name.to_ascii_lowercase();
        let command = ctx.registry.get(&lowered).ok_or_else(|| {
            CommandError::new(ErrorCode::NotFound, format!("no command named '{name}'"))
                .with_hint("run 'help' to list commands")
        })?;
        return Ok(help::command_help(command.spec()));
    }
    let commands: Vec<Value> = ctx
        .registry
        .specs()
        .map(|s| {
            json!({
                "name": s.name,
                "summary": s.summary,
                "subcommands": s.subcommands.iter().map(|c| c.name).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut stdout = String::from("Commands (run '<command> --help' for details):\n");
    for s in ctx.registry.specs() {
        stdout.push_str(&format!("  {:<8} {}\n", s.name, s.summary));
    }
    stdout.push_str("\nNo shell: one command per call; no pipes, redirections or chaining. Long text goes through stdin.\n");
    let mut result = Map::new();
    result.insert("ok".into(), true.into());
    result.insert("command".into(), "help".into());
    result.insert("count_total".into(), commands.len().into());
    result.insert("commands".into(), commands.into());
    let mut artifacts = Vec::new();
    if let Some(out) = &args.out {
        let full: Vec<Value> = ctx
            .registry
            .specs()
            .map(|s| Value::Object(help::command_help(s).result))
            .collect();
        artifacts.push(output::write_json_out(
            ctx,
            out,
            &json!({"commands": full}),
            "every command with its usage, flags and examples",
        )?);
        stdout.push_str(&format!("Full listing written to {}\n", artifacts[0].path));
    }
    Ok(Outcome {
        stdout,
        stderr: String::new(),
        result,
        artifacts,
    })
}
