//! Generic flag parsing driven by a [`FlagSpec`] list: `--flag value`, `--flag=value`, switches
//! and positionals. Unknown flags, missing values and missing required flags are `InvalidArgs`
//! with the usage line attached.

use std::collections::BTreeMap;

use crate::{CommandError, ErrorCode, FlagSpec};

/// Parsed arguments of one (sub)command.
#[derive(Debug, Clone, Default)]
pub struct ParsedArgs {
    values: BTreeMap<&'static str, String>,
    switches: Vec<&'static str>,
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
        let mut parsed = Self::default();
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
        self.values.get(name).map(String::as_str)
    }

    /// Whether a switch was given.
    pub fn has(&self, name: &str) -> bool {
        self.switches.contains(&name)
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
            .with_hint("add --confirm once you are sure (ask your human when in doubt)"))
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
