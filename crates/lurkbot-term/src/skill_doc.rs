//! Bundled skills generated from the command specs, so the agent's documentation of every
//! built-in command can never drift from the commands themselves.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::{CommandSpec, FlagSpec, Registry};

const RULES: &str = "Run commands through the `terminal_exec` tool (`command`, optional `stdin`, `timeout_ms`).\n\
There is no shell: one command per call; `;`, `&&`, `||`, `|`, `>`, `<`, backticks and `$(` are refused even inside quotes.\n\
Paths are relative to the LurkBot home. Writes that create many files or replace content need `--confirm`.\n\
Secrets never go on the command line: they live in `skills/<skill>/secrets/.env`.\n\
Large listings go to `--out <path>` and come back as artifacts.\n";

/// `(home-relative path, content)` of one `SKILL.md` per skill named in the specs.
pub fn bundled_skills(registry: &Registry) -> Vec<(String, String)> {
    let mut by_skill: BTreeMap<&str, Vec<&CommandSpec>> = BTreeMap::new();
    for spec in registry.specs() {
        by_skill.entry(spec.skill).or_default().push(spec);
    }
    by_skill
        .into_iter()
        .map(|(skill, specs)| (format!("skills/{skill}/SKILL.md"), render(skill, &specs)))
        .collect()
}

fn render(skill: &str, specs: &[&CommandSpec]) -> String {
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    let summary = specs
        .iter()
        .map(|s| s.summary)
        .collect::<Vec<_>>()
        .join("; ");
    let mut out = format!(
        "---\nname: {skill}\ndescription: \"Built-in terminal_exec command{}: {} — {}\"\n---\n\n# {skill}\n\n{RULES}",
        if names.len() > 1 { "s" } else { "" },
        names.join(", "),
        summary.replace('"', "'"),
    );
    for spec in specs {
        let _ = write!(
            out,
            "\n## {}\n\n{}\n\n    {}\n",
            spec.name, spec.summary, spec.usage
        );
        flags(&mut out, spec.flags);
        for sub in spec.subcommands {
            let _ = write!(
                out,
                "\n### {} {}\n\n{}\n\n    {}\n",
                spec.name, sub.name, sub.summary, sub.usage
            );
            flags(&mut out, sub.flags);
            examples(&mut out, sub.examples);
        }
        examples(&mut out, spec.examples);
    }
    out
}

fn flags(out: &mut String, flags: &[FlagSpec]) {
    if flags.is_empty() {
        return;
    }
    out.push('\n');
    for f in flags {
        let value = f.value.map(|v| format!(" <{v}>")).unwrap_or_default();
        let req = if f.required { " (required)" } else { "" };
        let _ = writeln!(out, "- `{}{value}`{req}: {}", f.name, f.description);
    }
}

fn examples(out: &mut String, examples: &[&str]) {
    if examples.is_empty() {
        return;
    }
    out.push_str("\nExamples:\n\n");
    for e in examples {
        let _ = writeln!(out, "    {e}");
    }
}
