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
    let mut files = Vec::new();
    for (skill, specs) in by_skill {
        files.push((format!("skills/{skill}/SKILL.md"), render(skill, &specs)));
        let credentials: Vec<_> = specs.iter().flat_map(|s| s.credentials.iter()).collect();
        if !credentials.is_empty() {
            let mut example = format!(
                "# Credentials of the {skill} skill. Copy this file to .env here (it stays 0600)\n# and fill in the values; they are redacted from every output and never logged.\n"
            );
            for (name, what) in credentials {
                example.push_str(&format!("# {what}\n{name}=\n"));
            }
            files.push((format!("skills/{skill}/secrets/.env.example"), example));
        }
    }
    files
}

fn render(skill: &str, specs: &[&CommandSpec]) -> String {
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    let summary = specs
        .iter()
        .map(|s| s.summary)
        .collect::<Vec<_>>()
        .join("; ");
    let mut out = format!(
        "---\nname: {skill}\ndescription: \"terminal_exec {}: {}\"\n---\n\n# {skill}\n\n{RULES}",
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
