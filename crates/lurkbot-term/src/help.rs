//! The help convention (ARCHITECTURE.md §4.4): `<cmd> --help`, `<cmd> help`, `<cmd> <sub> --help` and
//! `<cmd> help <sub>` all answer from the command's spec with exit 0.

use serde_json::{Map, Value, json};

use crate::{CommandSpec, FlagSpec, Outcome, SubcommandSpec};

/// What help a token list asks for: `Some(None)` for the command, `Some(Some(sub))` for a
/// subcommand, `None` when it is not a help request.
pub(crate) fn help_request(
    spec: &'static CommandSpec,
    args: &[String],
) -> Option<Option<&'static SubcommandSpec>> {
    let is_flag = |a: &String| a == "--help" || a == "-h";
    match args {
        [] => None,
        [only] if is_flag(only) => Some(None),
        [h] if h == "help" && spec.subcommand("help").is_none() && !spec.subcommands.is_empty() => {
            Some(None)
        }
        [h, sub] if h == "help" && !spec.subcommands.is_empty() => spec.subcommand(sub).map(Some),
        [first, rest @ ..] if rest.iter().any(is_flag) => Some(spec.subcommand(first)),
        _ => None,
    }
}

fn flags_json(flags: &[FlagSpec]) -> Value {
    Value::Array(
        flags
            .iter()
            .map(|f| {
                let name = match f.value {
                    Some(v) => format!("{} <{v}>", f.name),
                    None => f.name.to_string(),
                };
                json!({"name": name, "required": f.required, "description": f.description})
            })
            .collect(),
    )
}

fn flags_text(out: &mut String, flags: &[FlagSpec]) {
    for f in flags {
        let name = match f.value {
            Some(v) => format!("{} <{v}>", f.name),
            None => f.name.to_string(),
        };
        let req = if f.required { " (required)" } else { "" };
        out.push_str(&format!("  {name:<28} {}{req}\n", f.description));
    }
}

/// Help for a whole command.
pub(crate) fn command_help(spec: &CommandSpec) -> Outcome {
    let mut stdout = format!(
        "{} — {}\n\nUsage: {}\n",
        spec.name, spec.summary, spec.usage
    );
    if !spec.subcommands.is_empty() {
        stdout.push_str("\nSubcommands:\n");
        for s in spec.subcommands {
            stdout.push_str(&format!("  {:<16} {}\n", s.name, s.summary));
        }
        stdout.push_str(&format!(
            "\nRun '{} <subcommand> --help' for its flags.\n",
            spec.name
        ));
    }
    let subcommands: Vec<Value> = spec
        .subcommands
        .iter()
        .map(|s| json!({"name": s.name, "summary": s.summary, "usage": s.usage, "flags": flags_json(s.flags)}))
        .collect();
    let page = Page {
        summary: spec.summary,
        usage: spec.usage,
        flags: spec.flags,
        examples: spec.examples,
    };
    help_outcome(spec.name, None, stdout, subcommands, &page)
}

/// Help for one subcommand.
pub(crate) fn subcommand_help(spec: &CommandSpec, sub: &SubcommandSpec) -> Outcome {
    let stdout = format!(
        "{} {} — {}\n\nUsage: {}\n",
        spec.name, sub.name, sub.summary, sub.usage
    );
    let page = Page {
        summary: sub.summary,
        usage: sub.usage,
        flags: sub.flags,
        examples: sub.examples,
    };
    help_outcome(spec.name, Some(sub.name), stdout, Vec::new(), &page)
}

/// The parts of a help page shared by commands and subcommands.
struct Page<'a> {
    summary: &'a str,
    usage: &'a str,
    flags: &'a [FlagSpec],
    examples: &'a [&'a str],
}

fn help_outcome(
    name: &str,
    sub: Option<&str>,
    mut stdout: String,
    subcommands: Vec<Value>,
    page: &Page<'_>,
) -> Outcome {
    if !page.flags.is_empty() {
        stdout.push_str("\nFlags:\n");
        flags_text(&mut stdout, page.flags);
    }
    examples_text(&mut stdout, page.examples);
    let mut result = Map::new();
    result.insert("ok".into(), true.into());
    result.insert("command".into(), format!("{name} help").into());
    if let Some(sub) = sub {
        result.insert("subcommand".into(), sub.into());
    }
    result.insert("usage".into(), page.usage.into());
    result.insert("summary".into(), page.summary.into());
    result.insert("subcommands".into(), subcommands.into());
    result.insert("flags".into(), flags_json(page.flags));
    result.insert("examples".into(), json!(page.examples));
    Outcome {
        stdout,
        result,
        ..Outcome::default()
    }
}

fn examples_text(out: &mut String, examples: &[&str]) {
    if !examples.is_empty() {
        out.push_str("\nExamples:\n");
        for e in examples {
            out.push_str(&format!("  {e}\n"));
        }
    }
}
