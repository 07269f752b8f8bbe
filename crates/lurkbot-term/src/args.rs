//! Generic flag parsing driven by a [`FlagSpec`] list: `--flag value`, `--flag=value`, switches
//! and positionals. Unknown flags, missing values and missing required flags are `InvalidArgs`
//! with the usage line attached.

use std::collections::BTreeMap;

use crate::{CommandError, ErrorCode, FlagSpec};

/// Parsed arguments of one (sub)command.
///
/// Lookups name flags by string; a name the spec does not declare is a programming error
/// (a typo would otherwise read as "not given" forever), caught by a debug assertion that
/// every test run exercises.
#[derive(Debug, Clone, Default)]
pub struct ParsedArgs {
    values: BTreeMap<&'static str, String>,
    switches: Vec<&'static str>,
    /// The flags these were parsed against.
    declared: &'static [FlagSpec],
}

impl ParsedArgs {
    /// Parses `args` (the tokens after the command and subcommand names) against `flags`.
    ///
    /// # Errors
    /// `InvalidArgs` for an unknown flag, a flag given twice, a missing value, a switch given a
    /// value, a stray positional or a missing required flag; the message names the usage.
    pub fn parse(
        flags: &'static [FlagSpec],
        usage: &str,
        args: &[String],
    ) -> Result<Self, CommandError> {
        let invalid = |msg: String| {
            CommandError::new(ErrorCode::InvalidArgs, msg).with_hint(format!("usage: {usage}"))
        };
        let mut parsed = Self {
            declared: flags,
            ..Self::default()
        };
        let mut positionals = flags.iter().filter(|f| f.is_positional());
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            if arg.starts_with("--") && arg.len() > 2 {
                let (name, inline) = match arg.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (arg.as_str(), None),
                };
                let spec = flags
                    .iter()
                    .find(|f| !f.is_positional() && f.name == name)
                    .ok_or_else(|| {
                        invalid(format!(
                            "unknown flag '{name}'; valid flags: {}",
                            flag_names(flags)
                        ))
                    })?;
                if parsed.values.contains_key(spec.name) || parsed.switches.contains(&spec.name) {
                    return Err(invalid(format!("'{name}' is given more than once")));
                }
                match (spec.value, inline) {
                    (Some(_), Some(v)) => {
                        parsed.values.insert(spec.name, v);
                    }
                    (Some(placeholder), None) => {
                        let v = iter.next().ok_or_else(|| {
                            invalid(format!("'{name}' needs a value ({placeholder})"))
                        })?;
                        parsed.values.insert(spec.name, v.clone());
                    }
                    (None, Some(_)) => {
                        return Err(invalid(format!("'{name}' is a switch and takes no value")));
                    }
                    (None, None) => parsed.switches.push(spec.name),
                }
            } else {
                let spec = positionals
                    .next()
                    .ok_or_else(|| invalid(format!("unexpected argument '{arg}'")))?;
                parsed.values.insert(spec.name, arg.clone());
            }
        }
        if let Some(missing) = flags.iter().find(|f| {
            f.required && !parsed.values.contains_key(f.name) && !parsed.switches.contains(&f.name)
        }) {
            return Err(invalid(format!("missing required {}", missing.name)));
        }
        Ok(parsed)
    }

    /// The value of a flag or positional.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.assert_declared(name);
        self.values.get(name).map(String::as_str)
    }

    /// Whether a switch was given.
    pub fn has(&self, name: &str) -> bool {
        self.assert_declared(name);
        self.switches.contains(&name)
    }

    /// Whether `name` is one of the flags these arguments were parsed against.
    pub fn declares(&self, name: &str) -> bool {
        self.declared.iter().any(|f| f.name == name)
    }

    fn assert_declared(&self, name: &str) {
        debug_assert!(
            self.declared.is_empty() || self.declares(name),
            "flag '{name}' is looked up but not declared in the spec ({})",
            flag_names(self.declared)
        );
    }

    /// A numeric flag within `min..=max`, or `default` when absent.
    ///
    /// # Errors
    /// `InvalidArgs` when the value is not a whole number in range.
    pub fn number(
        &self,
        name: &str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, CommandError> {
        let Some(raw) = self.get(name) else {
            return Ok(default);
        };
        raw.parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                CommandError::new(
                    ErrorCode::InvalidArgs,
                    format!("{name} must be a whole number from {min} to {max}, got '{raw}'"),
                )
            })
    }

    /// Refuses with `ConfirmRequired` unless `--confirm` was given.
    ///
    /// # Errors
    /// `ConfirmRequired` naming what would happen.
    pub fn require_confirm(&self, what: &str) -> Result<(), CommandError> {
        if self.has("--confirm") {
            Ok(())
        } else {
            Err(CommandError::new(
                ErrorCode::ConfirmRequired,
                format!("{what} needs --confirm"),
            )
            .with_hint("add --confirm once you are sure"))
        }
    }

    /// Whether an existing target may be replaced: `--overwrite` counts only with `--confirm`.
    pub fn overwrite_confirmed(&self) -> bool {
        self.has("--overwrite") && self.has("--confirm")
    }
}

/// Splits a command's tokens into its subcommand and the rest. The executor has already checked
/// that a known subcommand is present, so an empty list gives `("", [])`.
pub(crate) fn split_subcommand(args: &[String]) -> (&str, &[String]) {
    args.split_first()
        .map_or(("", &[][..]), |(sub, rest)| (sub.as_str(), rest))
}

fn flag_names(flags: &[FlagSpec]) -> String {
    let names: Vec<&str> = flags
        .iter()
        .filter(|f| !f.is_positional())
        .map(|f| f.name)
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &[FlagSpec] = &[
        FlagSpec::value("--in", "PATH", true, "input"),
        FlagSpec::value("--max", "N", false, "limit"),
        FlagSpec::switch("--confirm", "confirm"),
        FlagSpec::switch("--overwrite", "overwrite"),
        FlagSpec::positional("<name>", false, "a name"),
    ];

    fn parse(args: &[&str]) -> Result<ParsedArgs, CommandError> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        ParsedArgs::parse(FLAGS, "x --in PATH", &args)
    }

    #[test]
    fn parses_flags_switches_and_positionals() {
        let p = parse(&["--in=a.zip", "--max", "5", "--confirm", "nm"]).unwrap();
        assert_eq!(p.get("--in"), Some("a.zip"));
        assert_eq!(p.number("--max", 200, 1, 10).unwrap(), 5);
        assert_eq!(p.get("<name>"), Some("nm"));
        assert!(p.has("--confirm") && !p.overwrite_confirmed());
        assert!(p.require_confirm("x").is_ok());
    }

    #[test]
    fn refusals_are_invalid_args() {
        for args in [
            &["--in"][..],
            &["--nope", "--in", "a"],
            &["--in", "a", "--in", "b"],
            &["--confirm=yes", "--in", "a"],
            &["--in", "a", "p1", "p2"],
            &["--max", "3"],
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgs, "{args:?}");
            assert!(e.hint.as_deref().unwrap_or("").contains("usage"));
        }
        let p = parse(&["--in", "a", "--max", "0"]).unwrap();
        assert_eq!(
            p.number("--max", 1, 1, 10).unwrap_err().code,
            ErrorCode::InvalidArgs
        );
        let p = parse(&["--in", "a", "--overwrite"]).unwrap();
        assert!(!p.overwrite_confirmed());
        assert_eq!(
            p.require_confirm("extract").unwrap_err().code,
            ErrorCode::ConfirmRequired
        );
    }
}

#[cfg(test)]
mod declared_tests {
    use super::*;

    /// Every flag a command's code looks up by name is declared in that command's spec: a
    /// typo cannot hide in a path no test happens to run.
    #[test]
    fn every_flag_looked_up_in_a_commands_code_is_declared_in_its_spec() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let registry = crate::default_registry();
        let declared = |commands: &[&str]| -> Vec<&'static str> {
            registry
                .specs()
                .filter(|s| commands.contains(&s.name))
                .flat_map(|s| {
                    s.flags
                        .iter()
                        .chain(s.subcommands.iter().flat_map(|sub| sub.flags.iter()))
                        .map(|f| f.name)
                })
                .collect()
        };
        let mut checked = 0;
        let mut undeclared = Vec::new();
        let folders: Vec<(std::path::PathBuf, Vec<&str>)> = ["cal", "rss", "tar", "zip"]
            .iter()
            .map(|c| (root.join("commands").join(c), vec![*c]))
            .chain(std::iter::once((root.join("archive"), vec!["zip", "tar"])))
            .collect();
        for (folder, commands) in folders {
            let names = declared(&commands);
            let entries =
                std::fs::read_dir(&folder).map_or_else(|_| Vec::new(), |d| d.flatten().collect());
            for entry in entries {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                for call in [".get(\"", ".has(\"", ".number(\""] {
                    for (at, _) in text.match_indices(call) {
                        let rest = &text[at + call.len()..];
                        let flag: String = rest.chars().take_while(|c| *c != '"').collect();
                        if !flag.starts_with("--") {
                            continue;
                        }
                        checked += 1;
                        if !names.contains(&flag.as_str()) {
                            undeclared.push(format!("{}: {flag}", entry.path().display()));
                        }
                    }
                }
            }
        }
        assert!(checked > 40, "only {checked} lookups found");
        assert!(undeclared.is_empty(), "undeclared flags: {undeclared:?}");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not declared")]
    fn an_undeclared_lookup_is_caught_in_debug_builds() {
        const FLAGS: &[FlagSpec] = &[FlagSpec::switch("--confirm", "confirm")];
        let parsed = ParsedArgs::parse(FLAGS, "x", &[]).unwrap_or_default();
        let _ = parsed.has("--confrim");
    }
}
