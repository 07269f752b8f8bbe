//! `.env` files as Docker Compose documents them (ARCHITECTURE.md §2), so a line copied from
//! the seed's example (`IRC_CHANNEL=#lemon`) means what it says:
//! - `KEY=value`, optionally after `export `; blank lines and lines starting with `#` are skipped;
//! - unquoted: surrounding blanks trimmed, and `#` starts a comment only after a blank
//!   (`A=b#c` is `b#c`, `A=b #c` is `b`);
//! - `'…'`: literal, `\'` is a quote; `"…"`: `\n`, `\r`, `\t`, `\\`, `\"` and `\$`
//!   understood; both may span lines, and anything after the closing quote must be a comment;
//! - `${NAME}` and `$NAME` in unquoted and double-quoted values take an earlier line's value
//!   (else the process environment's, else nothing); `$$` is a `$`.
//!
//! Errors name the line, never its content (a value may be a secret).

use std::collections::BTreeMap;

/// A line that is not `KEY=value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct DotenvError {
    /// The 1-based line where the entry starts.
    pub line: usize,
    /// What is wrong, without the line's content.
    pub what: &'static str,
}

/// The entries of `text` in order; a malformed entry is an error and the rest still parse.
pub fn parse(text: &str) -> Vec<Result<(String, String), DotenvError>> {
    let mut out = Vec::new();
    let mut known: BTreeMap<String, String> = BTreeMap::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, raw)) = lines.next() {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let error = |what| {
            Err(DotenvError {
                line: index + 1,
                what,
            })
        };
        let Some((key, rest)) = line.split_once('=') else {
            out.push(error("no '=' (write KEY=value)"));
            continue;
        };
        let key = key.trim_end();
        if key.is_empty()
            || key.starts_with(|c: char| c.is_ascii_digit())
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            out.push(error("the name is not a variable name"));
            continue;
        }
        let unquoted = rest;
        let rest = rest.trim_start();
        let value = match rest.chars().next() {
            Some(quote @ ('"' | '\'')) => {
                // The value may go on over the following lines until its closing quote.
                let mut body = rest[1..].to_string();
                let closed = loop {
                    if let Some(end) = closing_quote(&body, quote) {
                        break Some(end);
                    }
                    match lines.next() {
                        Some((_, more)) => {
                            body.push('\n');
                            body.push_str(more);
                        }
                        None => break None,
                    }
                };
                let Some(end) = closed else {
                    out.push(error("a quote is not closed"));
                    continue;
                };
                let after = body[end + 1..].trim_start();
                if !(after.is_empty() || after.starts_with('#')) {
                    out.push(error(
                        "text after the closing quote (start a comment with #)",
                    ));
                    continue;
                }
                let inner = &body[..end];
                if quote == '\'' {
                    inner.replace("\\'", "'")
                } else {
                    interpolate(&unescape(inner), &known)
                }
            }
            _ => {
                // A `#` after a blank starts a comment (also right after the `=`: `A= #x` is
                // empty); one anywhere else is part of the value (`A=#lemon`).
                let comment = unquoted
                    .char_indices()
                    .find(|&(i, c)| {
                        c == '#'
                            && unquoted[..i]
                                .chars()
                                .next_back()
                                .is_some_and(|b| b == ' ' || b == '\t')
                    })
                    .map(|(i, _)| i);
                let value = comment.map_or(unquoted, |at| &unquoted[..at]);
                interpolate(value.trim(), &known)
            }
        };
        known.insert(key.to_string(), value.clone());
        out.push(Ok((key.to_string(), value)));
    }
    out
}

/// `NAME="value"`: double-quoted with `\\`, `"` and `$` escaped, so [`parse`] reads the value
/// back exactly; `None` for a value with a control character (a line break would start a line
/// of its own: another variable).
pub fn assignment(name: &str, value: &str) -> Option<String> {
    if value.chars().any(char::is_control) {
        return None;
    }
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('$', "\\$");
    Some(format!("{name}=\"{escaped}\""))
}

/// Sets `vars` in the `.env` file at `path` (created 0600): a line that sets a name is
/// replaced, other lines (comments included) are kept, new names are appended; written
/// atomically.
///
/// # Errors
/// A value with a control character (named), or the file failing.
pub fn set_in_file(path: &std::path::Path, vars: &[(&str, &str)]) -> Result<(), String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    for (name, value) in vars {
        let line = assignment(name, value).ok_or_else(|| {
            format!(
                "{name}: the value holds a control character (a line break?) and was not written"
            )
        })?;
        let sets = |l: &String| {
            let l = l.trim_start();
            let l = l.strip_prefix("export ").unwrap_or(l).trim_start();
            l.strip_prefix(*name)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        };
        match lines.iter_mut().find(|l| sets(l)) {
            Some(existing) => *existing = line,
            None => lines.push(line),
        }
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    crate::write_atomic_with_mode(path, text.as_bytes(), 0o600).map_err(|e| e.to_string())
}

/// The variables of `text`, the last of a repeated name winning, and the errors.
pub fn parse_map(text: &str) -> (BTreeMap<String, String>, Vec<DotenvError>) {
    let mut vars = BTreeMap::new();
    let mut errors = Vec::new();
    for entry in parse(text) {
        match entry {
            Ok((k, v)) => {
                vars.insert(k, v);
            }
            Err(e) => errors.push(e),
        }
    }
    (vars, errors)
}

/// Where `body` (after an opening `quote`) closes: the first unescaped `quote`.
fn closing_quote(body: &str, quote: char) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == quote && !escaped => return Some(i),
            _ => escaped = false,
        }
    }
    None
}

/// The escapes of a double-quoted value; `\$` is kept escaped for [`interpolate`].
fn unescape(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('$') => out.push_str("$$"),
            Some(other @ ('\\' | '"')) => out.push(other),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// `${NAME}` / `$NAME` from earlier lines or the environment; `$$` is `$`.
fn interpolate(value: &str, known: &BTreeMap<String, String>) -> String {
    if !value.contains('$') {
        return value.to_string();
    }
    let lookup = |name: &str| {
        known
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
            .unwrap_or_default()
    };
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(braced) = after.strip_prefix('{')
            && let Some(end) = braced.find('}')
        {
            out.push_str(&lookup(&braced[..end]));
            rest = &braced[end + 1..];
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if end == 0 {
                out.push('$');
            } else {
                out.push_str(&lookup(&after[..end]));
            }
            rest = &after[end..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(text: &str) -> BTreeMap<String, String> {
        let (vars, errors) = parse_map(text);
        assert!(errors.is_empty(), "{errors:?}");
        vars
    }

    #[test]
    fn the_seeds_example_reads_as_written() {
        // The IRC seed's `.env` example, verbatim.
        let v = vars(
            "IRC_SERVER=irc.libera.chat\nIRC_PORT=6697\nIRC_TLS=1\nIRC_CHANNEL=#lemon\nIRC_NICK=lemonbot\n",
        );
        assert_eq!(v["IRC_CHANNEL"], "#lemon");
        assert_eq!(v["IRC_PORT"], "6697");
    }

    #[test]
    fn composes_rules_for_comments_and_quotes() {
        let v = vars(concat!(
            "# a comment\n\n",
            "A=VAL # comment\n",
            "B=VAL# not a comment\n",
            "C=\"VAL # not a comment\"\n",
            "D=\"VAL\" # comment\n",
            "E='$OTHER'\n",
            "F='Let\\'s go!'\n",
            "G=\"{\\\"hello\\\": \\\"json\\\"}\"\n",
            "H=\"some\\tvalue\"\n",
            "export I = spaced  \n",
            "J=\"two\nlines\"\n",
            "K=\n",
            "N= #only a comment\n",
            "L=${A}-$B-$$-\\$\n",
            "M=\"\\$A\"\n",
        ));
        assert_eq!(v["A"], "VAL");
        assert_eq!(v["B"], "VAL# not a comment");
        assert_eq!(v["C"], "VAL # not a comment");
        assert_eq!(v["D"], "VAL");
        assert_eq!(v["E"], "$OTHER");
        assert_eq!(v["F"], "Let's go!");
        assert_eq!(v["G"], "{\"hello\": \"json\"}");
        assert_eq!(v["H"], "some\tvalue");
        assert_eq!(v["I"], "spaced");
        assert_eq!(v["J"], "two\nlines");
        assert_eq!(v["K"], "");
        assert_eq!(v["N"], "");
        assert_eq!(v["L"], "VAL-VAL# not a comment-$-\\$");
        assert_eq!(v["M"], "$A");
    }

    #[test]
    fn assignments_read_back_exactly_and_files_keep_their_other_lines() {
        for value in ["plain", "sk-\"q\"-$HOME-\\x #not a comment", ""] {
            let line = assignment("K", value).unwrap_or_default();
            assert_eq!(vars(&line)["K"], value, "{line}");
        }
        assert_eq!(assignment("K", "a\nB=planted"), None);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(".env");
        std::fs::write(&path, "# mine\nexport A=1\nB=2\n").unwrap_or_default();
        set_in_file(&path, &[("A", "one"), ("C", "three")]).unwrap_or_default();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(text, "# mine\nA=\"one\"\nB=2\nC=\"three\"\n");
        assert!(set_in_file(&path, &[("D", "x\ny")]).is_err());
    }

    #[test]
    fn malformed_lines_are_named_never_shown() {
        let (vars, errors) =
            parse_map("GOOD=1\nno equals sign secret123\nA=\"open\nB='x' trailing\n");
        assert_eq!(vars.get("GOOD").map(String::as_str), Some("1"));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(errors[0].line, 2);
        assert!(!errors[0].to_string().contains("secret123"));
        assert_eq!(errors[1].what, "a quote is not closed");
    }
}
