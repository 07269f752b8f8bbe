//! Keeping secrets out of every output: values after secret-carrying flags, passwords inside
//! URLs (`scheme://user:password@host`), and the values of skill `.env` files.

use serde_json::Value;

use crate::parser::{is_sensitive_name, split_sensitive};

/// What replaces a secret.
pub const MASK: &str = "***";

/// argv with the value of every secret-carrying flag replaced by [`MASK`].
pub fn mask_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut mask_next = false;
    for arg in argv {
        if mask_next {
            out.push(MASK.to_string());
            mask_next = false;
        } else if let Some((flag, attached)) = split_sensitive(arg) {
            if attached {
                out.push(format!("{flag}{MASK}"));
            } else {
                out.push(arg.clone());
                mask_next = true;
            }
        } else {
            out.push(mask_url_passwords(arg));
        }
    }
    out
}

/// `text` with the password of every `scheme://user:password@host` replaced by [`MASK`].
pub fn mask_url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_len = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>') || c.is_whitespace()
            })
            .unwrap_or(tail.len());
        let authority = &tail[..authority_len];
        match authority.rfind('@').and_then(|a| {
            let userinfo = &authority[..a];
            userinfo.find(':').map(|c| (c, a))
        }) {
            Some((colon, at)) => {
                out.push_str(&authority[..=colon]);
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_len..];
    }
    out.push_str(rest);
    out
}

/// The raw command text with whatever follows a secret-carrying flag (`--token x`,
/// `--token=x`, quoted or not) replaced by [`MASK`]. Works on text that failed to parse too, so
/// a refused command never leaks a secret into the audit log.
pub fn mask_command_text(raw: &str) -> String {
    let raw = &mask_url_passwords(raw);
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let at_boundary = i == 0 || raw[..i].ends_with([' ', '\t', '"', '\'']);
        let rest = &raw[i..];
        let flag_len = if at_boundary && rest.starts_with('-') {
            let dashes = rest.len() - rest.trim_start_matches('-').len();
            let name_len = rest[dashes..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len() - dashes);
            let name = &rest[dashes..dashes + name_len];
            let next = rest[dashes + name_len..].chars().next();
            (is_sensitive_name(name)
                && matches!(next, None | Some('=' | ':' | ' ' | '\t' | '"' | '\'')))
            .then_some(dashes + name_len)
        } else {
            None
        };
        let Some(flag_len) = flag_len else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
            continue;
        };
        out.push_str(&rest[..flag_len]);
        i += flag_len;
        // separator(s)
        while let Some(c) = raw[i..]
            .chars()
            .next()
            .filter(|c| matches!(c, '=' | ':' | ' ' | '\t'))
        {
            out.push(c);
            i += 1;
        }
        // the value: a quoted string or a bare word
        let rest = &raw[i..];
        let len = match rest.chars().next() {
            Some(q @ ('"' | '\'')) => rest[1..].find(q).map_or(rest.len(), |end| end + 2),
            Some(_) => rest.find([' ', '\t']).unwrap_or(rest.len()),
            None => 0,
        };
        if len > 0 {
            out.push_str(MASK);
        }
        i += len;
    }
    out
}

/// Replaces known secret values (from skill `.env` files) in text and JSON.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

impl Redactor {
    /// A redactor for `values` (longest first is best; see `Secrets::redaction_values`).
    pub fn new(values: Vec<String>) -> Self {
        Self { values }
    }

    /// `text` with every secret value replaced by [`MASK`].
    pub fn text(&self, text: &str) -> String {
        let mut out = if text.contains("://") {
            mask_url_passwords(text)
        } else {
            text.to_string()
        };
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), MASK);
            }
        }
        out
    }

    /// Redacts every string (keys included) inside a JSON value. Strings and objects that hold
    /// nothing to mask are left untouched (no copies on the common path).
    pub fn json(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.needs_masking(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            Value::Object(map) if map.keys().any(|k| self.needs_masking(k)) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.json(&mut v);
                    map.insert(self.text(&k), v);
                }
            }
            Value::Object(map) => map.values_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }

    /// Whether `text` holds a secret value or a URL that may carry a password.
    fn needs_masking(&self, text: &str) -> bool {
        (text.contains("://") && text.contains('@'))
            || self.values.iter().any(|v| text.contains(v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_masks_values_and_keys_and_leaves_the_rest() {
        let r = Redactor::new(vec!["hunter2".into()]);
        let mut v = serde_json::json!({
            "url": "https://me:pw9@e.com/",
            "hunter2-key": ["x hunter2 y", {"plain": "https://e.com/a"}],
            "n": 3,
        });
        r.json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "url": "https://me:***@e.com/",
                "***-key": ["x *** y", {"plain": "https://e.com/a"}],
                "n": 3,
            })
        );
        let mut nested = serde_json::json!({"a": {"b": "http://u:p@h/"}});
        Redactor::default().json(&mut nested);
        assert_eq!(nested["a"]["b"], "http://u:***@h/");
    }

    #[test]
    fn masks_url_passwords() {
        assert_eq!(
            mask_url_passwords("rss add --url https://me:hunter2@e.com/f?x=1 and ftp://a:b@c"),
            "rss add --url https://me:***@e.com/f?x=1 and ftp://a:***@c"
        );
        assert_eq!(
            mask_url_passwords("https://e.com/a@b:c"),
            "https://e.com/a@b:c"
        );
        assert_eq!(
            mask_url_passwords("https://user@e.com/"),
            "https://user@e.com/"
        );
        assert_eq!(mask_url_passwords("no urls: a:b@c"), "no urls: a:b@c");
        assert_eq!(
            mask_command_text("x --url 'http://u:p@h/'"),
            "x --url 'http://u:***@h/'"
        );
    }

    #[test]
    fn masks_argv_values() {
        let argv: Vec<String> = [
            "irc",
            "connect",
            "--password",
            "hunter2",
            "--Token=abc",
            "--keep",
            "x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            mask_argv(&argv),
            [
                "irc",
                "connect",
                "--password",
                "***",
                "--Token=***",
                "--keep",
                "x"
            ]
        );
    }

    #[test]
    fn masks_raw_text_in_every_form() {
        assert_eq!(
            mask_command_text("irc x --password hunter2 --to a"),
            "irc x --password *** --to a"
        );
        assert_eq!(mask_command_text("x --TOKEN=abc; rm"), "x --TOKEN=*** rm");
        assert_eq!(
            mask_command_text("x --secret \"a b c\" y"),
            "x --secret *** y"
        );
        assert_eq!(mask_command_text("x --api-key 'k k'"), "x --api-key ***");
        assert_eq!(
            mask_command_text("x --keyboard k --passive p --max -1"),
            "x --keyboard k --passive *** --max -1"
        );
        assert_eq!(
            mask_command_text("x --token:abc --api_key k -PW p --auth-token=\"q r\" z"),
            "x --token:*** --api_key *** -PW *** --auth-token=*** z"
        );
        assert_eq!(mask_command_text("x --pass"), "x --pass");
        assert_eq!(mask_command_text("é --key ü"), "é --key ***");
    }

    #[test]
    fn redacts_values_in_text_and_json() {
        let r = Redactor::new(vec!["hunter2-long".into(), "tok".into()]);
        assert_eq!(r.text("pw=hunter2-long tok"), "pw=*** ***");
        let mut v = serde_json::json!({"a": ["hunter2-long"], "tok": {"b": "x tok"}, "n": 1});
        r.json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["***"], "***": {"b": "x ***"}, "n": 1})
        );
    }
}
