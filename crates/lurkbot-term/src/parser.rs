//! Parsing a `terminal_exec` command string into argv (ARCHITECTURE.md §4.2). Everything here runs
//! before any command does.

/// Longest accepted command, in characters.
pub const MAX_COMMAND_CHARS: usize = 4096;
/// Most tokens accepted.
pub const MAX_TOKENS: usize = 64;
/// Shell operators refused anywhere in the raw text, quoted or not.
pub const BANNED_TOKENS: &[&str] = &[";", "&&", "||", "|", ">", "<", "`", "$("];
/// Words that mark a flag as secret-carrying when its name (lower-cased, `_` and `-` removed)
/// contains one of them (ARCHITECTURE.md §4.2).
pub const SENSITIVE_WORDS: &[&str] = &[
    "pass",
    "pwd",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "accesskey",
    "credential",
    "cookie",
    "auth",
];
/// Flag names that carry a secret only when they are the whole name.
pub const SENSITIVE_NAMES: &[&str] = &["key", "pw"];

/// Why a command string was refused (always `InvalidCommand`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Splits `raw` into tokens, applying every rule of §4.2 except the command lookup and the
/// sensitive-flag check (see [`sensitive_flag`]).
///
/// Line breaks and NUL are refused anywhere in `raw`, even at the ends, so that nothing a
/// caller trims differently can slip through.
///
/// # Errors
/// [`ParseError`] with a message that says what to do instead.
pub fn parse_command(raw: &str) -> Result<Vec<String>, ParseError> {
    if raw.contains(['\n', '\r', '\0']) {
        return Err(ParseError(
            "the command contains a line break or NUL: pass one command per call, and long text through stdin".into(),
        ));
    }
    let command = raw.trim();
    if command.is_empty() {
        return Err(ParseError(
            "the command is empty: run 'help' to list commands".into(),
        ));
    }
    if let Some(token) = BANNED_TOKENS.iter().find(|t| command.contains(*t)) {
        return Err(ParseError(format!(
            "the command contains '{token}': there is no shell (no pipes, redirections, chaining or substitution, even inside quotes); run one command per call and pass text through stdin"
        )));
    }
    let chars = command.chars().count();
    if chars > MAX_COMMAND_CHARS {
        return Err(ParseError(format!(
            "the command is {chars} characters long (at most {MAX_COMMAND_CHARS}): pass long text through stdin"
        )));
    }
    let tokens = tokenize(command)?;
    if tokens.len() > MAX_TOKENS {
        return Err(ParseError(format!(
            "the command has {} tokens (at most {MAX_TOKENS}): pass long text through stdin",
            tokens.len()
        )));
    }
    Ok(tokens)
}

/// Splits on spaces and tabs; `"…"` and `'…'` quote, `\` escapes the next character outside
/// single quotes. Nothing is expanded.
fn tokenize(command: &str) -> Result<Vec<String>, ParseError> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut in_token = false;
    let mut quote = Quote::None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (&quote, c) {
            (Quote::Single, '\'') | (Quote::Double, '"') => quote = Quote::None,
            (Quote::Single, c) => current.push(c),
            (_, '\\') => match chars.next() {
                Some(next) => {
                    current.push(next);
                    in_token = true;
                }
                None => {
                    return Err(ParseError(
                        "the command ends with a backslash: escape it as \\\\ or remove it".into(),
                    ));
                }
            },
            (Quote::Double, c) => current.push(c),
            (Quote::None, ' ' | '\t') => {
                if in_token {
                    tokens.push(std::mem::take(&mut current));
                    in_token = false;
                }
            }
            (Quote::None, '\'') => {
                quote = Quote::Single;
                in_token = true;
            }
            (Quote::None, '"') => {
                quote = Quote::Double;
                in_token = true;
            }
            (Quote::None, c) => {
                current.push(c);
                in_token = true;
            }
        }
    }
    if quote != Quote::None {
        return Err(ParseError(
            "the command has an unterminated quote: close every ' and \"".into(),
        ));
    }
    if in_token {
        tokens.push(current);
    }
    Ok(tokens)
}

/// The first argument (after the command name) that is a secret-carrying flag, if any.
pub fn sensitive_flag(argv: &[String]) -> Option<&str> {
    argv.iter()
        .skip(1)
        .map(String::as_str)
        .find(|arg| split_sensitive(arg).is_some())
}

/// A secret-carrying flag token split into the flag with its separator (`--token=`,
/// `--token:`, or `--token` alone) and whether a value is attached; `None` for other tokens.
/// Any number of leading dashes, any case, any spelling (`--api_key`, `-Auth-Token:x`).
pub fn split_sensitive(arg: &str) -> Option<(&str, bool)> {
    let name_start = arg.len() - arg.trim_start_matches('-').len();
    if name_start == 0 {
        return None;
    }
    let name_end = arg[name_start..]
        .find(['=', ':'])
        .map_or(arg.len(), |i| name_start + i);
    if !is_sensitive_name(&arg[name_start..name_end]) {
        return None;
    }
    Some(if name_end < arg.len() {
        (&arg[..=name_end], true)
    } else {
        (arg, false)
    })
}

/// Whether a flag name (without dashes) is secret-carrying by ARCHITECTURE.md §4.2's rule.
pub fn is_sensitive_name(name: &str) -> bool {
    let normal: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    !normal.is_empty()
        && (SENSITIVE_NAMES.contains(&normal.as_str())
            || SENSITIVE_WORDS.iter().any(|w| normal.contains(w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok(raw: &str) -> Vec<String> {
        parse_command(raw).unwrap()
    }

    #[test]
    fn splits_and_quotes() {
        assert_eq!(
            ok("  zip list   --in\ta.zip "),
            ["zip", "list", "--in", "a.zip"]
        );
        assert_eq!(
            ok(r#"echo "a b" 'c d' e\ f"#),
            ["echo", "a b", "c d", "e f"]
        );
        assert_eq!(
            ok(r#"x 'no \escape' "with \" quote" """#),
            ["x", "no \\escape", "with \" quote", ""]
        );
        assert_eq!(ok(r"x a\\b"), ["x", r"a\b"]);
        assert_eq!(
            ok("rss fetch --url https://e.com/?a=1&b=2"),
            ["rss", "fetch", "--url", "https://e.com/?a=1&b=2"]
        );
    }

    #[test]
    fn refuses_what_the_rules_refuse() {
        let refused = [
            "",
            "   ",
            "help\n",
            "help\r",
            "a\0b",
            "help\nzip",
            "a ; b",
            "a && b",
            "a || b",
            "a | b",
            "a > f",
            "a < f",
            "a `b`",
            "a $(b)",
            "a ';'",
            "a \"&&\"",
            "a '|'",
            "a \">\"",
            "a '<'",
            "a '`'",
            "a '$(x)'",
            "a \"unterminated",
            "a 'unterminated",
            "a trailing\\",
        ];
        for raw in refused {
            assert!(parse_command(raw).is_err(), "{raw:?} was accepted");
        }
        assert!(parse_command(&format!("x {}", "a".repeat(4094))).is_ok());
        assert!(parse_command(&format!("x {}", "a".repeat(4095))).is_err());
        let tokens = |n: usize| vec!["t"; n].join(" ");
        assert!(parse_command(&tokens(64)).is_ok());
        assert!(parse_command(&tokens(65)).is_err());
    }

    #[test]
    fn finds_sensitive_flags_in_every_form() {
        let argv = |s: &str| ok(s);
        for raw in [
            "x --password p",
            "x --PASS p",
            "x --key=k",
            "x a --secret s",
            "x --token=t",
            "x --apikey a",
            "x --Api-Key=a",
            "x --api_key a",
            "x --passwd p",
            "x --client-secret s",
            "x --access-token t",
            "x --private-key k",
            "x --auth-token t",
            "x --token:x",
            "x -password p",
            "x -PW p",
            "x --db-pwd=p",
            "x --session_cookie c",
            "x --aws-accesskey a",
            "x --credentials f",
            "x --passwords p",
        ] {
            assert!(sensitive_flag(&argv(raw)).is_some(), "{raw}");
        }
        assert_eq!(
            sensitive_flag(&argv(
                "x --keyboard --in key --max -1 --keys --url http://a/auth"
            )),
            None
        );
        assert_eq!(split_sensitive("--token:abc"), Some(("--token:", true)));
        assert_eq!(split_sensitive("-Api_Key=v"), Some(("-Api_Key=", true)));
        assert_eq!(split_sensitive("--secret"), Some(("--secret", false)));
        assert_eq!(split_sensitive("--"), None);
    }

    proptest! {
        #[test]
        fn never_panics_and_never_accepts_banned_tokens(raw in "\\PC{0,200}") {
            if parse_command(&raw).is_ok() {
                for t in BANNED_TOKENS {
                    prop_assert!(!raw.contains(t), "accepted {raw:?} containing {t:?}");
                }
                prop_assert!(!raw.contains(['\n', '\r', '\0']));
            }
        }

        #[test]
        fn shell_like_input_never_panics(raw in "[a-z \\t'\"\\\\;&|<>`$()\\n-]{0,80}") {
            if let Ok(tokens) = parse_command(&raw) {
                prop_assert!(!tokens.is_empty() && tokens.len() <= MAX_TOKENS);
                for t in BANNED_TOKENS {
                    prop_assert!(!raw.contains(t));
                }
            }
        }
    }
}
