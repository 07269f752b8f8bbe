//! Skill credentials from `skills/<skill>/secrets/.env` and the home's own `.env` (provider
//! keys, tokens), both dotenv, and the list of secret values that must never appear in any
//! output or model request.
//!
//! A variable counts as secret when its name contains `PASS`, `TOKEN`, `SECRET`, `KEY`,
//! `CREDENTIAL` or `AUTH` (so `IRC_NICKSERV_PASSWORD` and `IRC_CHANNEL_KEY` do, `IRC_NICK` does
//! not). Secret values of 3 characters or more are redacted from every output; shorter ones
//! could not be told apart from ordinary text.

use std::collections::BTreeMap;

use crate::{Home, layout};

/// Shortest secret value that is redacted.
const MIN_REDACTED_LEN: usize = 3;

/// Variables of every installed skill's `.env` file.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    by_skill: BTreeMap<String, BTreeMap<String, String>>,
    home_env: BTreeMap<String, String>,
    /// The gateway home's variables, for a user's home: only redacted, never looked up.
    shared_env: BTreeMap<String, String>,
    problems: Vec<String>,
}

impl Secrets {
    /// Reads `skills/*/secrets/.env` under the home. Unreadable or malformed files are recorded
    /// in [`Secrets::problems`] (by path and line, never by value) and skipped.
    pub fn load(home: &Home) -> Self {
        let mut secrets = Self::default();
        let home_env = home.join(".env");
        if home_env.is_file() {
            secrets.home_env = secrets.read_env(&home_env);
        }
        // A user's home on a shared gateway: the gateway's own variables are never theirs to
        // use, but are masked in their output all the same.
        if let Some(shared) = home.shared().map(|s| s.join(".env"))
            && shared.is_file()
        {
            secrets.shared_env = secrets.read_env(&shared);
        }
        let Ok(entries) = std::fs::read_dir(home.join(layout::SKILLS)) else {
            return secrets;
        };
        for entry in entries.flatten() {
            let env_path = entry.path().join("secrets/.env");
            if !env_path.is_file() {
                continue;
            }
            let skill = entry.file_name().to_string_lossy().into_owned();
            let vars = secrets.read_env(&env_path);
            secrets.by_skill.insert(skill, vars);
        }
        secrets
    }

    /// The variables of one dotenv file; problems are recorded without the line's content.
    fn read_env(&mut self, env_path: &std::path::Path) -> BTreeMap<String, String> {
        let text = match std::fs::read_to_string(env_path) {
            Ok(text) => text,
            Err(e) => {
                self.problems.push(format!("{}: {e}", env_path.display()));
                return BTreeMap::new();
            }
        };
        let (vars, errors) = crate::dotenv::parse_map(&text);
        for e in errors {
            self.problems.push(format!("{}: {e}", env_path.display()));
        }
        vars
    }

    /// A variable of the home's own `.env`.
    pub fn home_variable(&self, name: &str) -> Option<&str> {
        self.home_env.get(name).map(String::as_str)
    }

    /// The variables of one skill, if it has a `.env` file.
    pub fn skill(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.by_skill.get(name)
    }

    /// Files or lines that could not be read.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Values to redact from output, longest first (so a secret containing another is masked
    /// whole).
    pub fn redaction_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self
            .by_skill
            .values()
            .chain([&self.home_env, &self.shared_env])
            .flat_map(|vars| vars.iter())
            .filter_map(|(k, v)| {
                // A URL's password is a secret whatever the variable is called
                // (`LURKBOT_STATE_URL=postgres://user:…@host/db`).
                let secret = if is_secret_name(k) {
                    v.as_str()
                } else {
                    url_password(v)?
                };
                (secret.chars().count() >= MIN_REDACTED_LEN).then(|| secret.to_string())
            })
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        values
    }
}

/// The password a URL carries in its user information (`scheme://user:password@host`).
fn url_password(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    Some(password)
}

/// Whether a variable name marks a secret.
fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["PASS", "TOKEN", "SECRET", "KEY", "CREDENTIAL", "AUTH"]
        .iter()
        .any(|w| n.contains(w))
}

/// Whether `given` is the secret `expected`, compared without an early exit (a token, a
/// webhook's verify token): how long it takes does not tell how much of it was right.
pub fn secret_matches(expected: &str, given: &str) -> bool {
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_password_is_redacted_whatever_its_variable_is_called() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        std::fs::write(
            home.join(".env"),
            "LURKBOT_STATE_URL=postgres://lurk:pg-s3cret@db.example/lb\nOPENAI_BASE_URL=http://127.0.0.1:8080/v1\n",
        )
        .unwrap();
        let values = Secrets::load(&home).redaction_values();
        assert_eq!(values, ["pg-s3cret"]);
        assert_eq!(url_password("http://u@h/p?x=a:b@c"), None);
    }

    #[test]
    fn loads_skill_env_files_and_lists_secret_values() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let env_dir = home.join("skills/irc-cli/secrets");
        std::fs::create_dir_all(&env_dir).unwrap();
        std::fs::write(
            env_dir.join(".env"),
            "# c\nIRC_NICK=lurk\nIRC_NICKSERV_PASSWORD=hunter2-long\nIRC_CHANNEL_KEY=k\nAPI_TOKEN=tok-123\n",
        )
        .unwrap();
        let s = Secrets::load(&home);
        assert_eq!(
            s.skill("irc-cli")
                .and_then(|v| v.get("IRC_NICK"))
                .map(String::as_str),
            Some("lurk")
        );
        assert_eq!(
            s.redaction_values(),
            vec!["hunter2-long".to_string(), "tok-123".to_string()]
        );
        assert!(s.problems().is_empty());
    }

    #[test]
    fn home_env_values_join_the_redaction_set() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        std::fs::write(
            home.join(".env"),
            "OPENAI_API_KEY=sk-home-key-1\nOPENAI_BASE_URL=http://x\nLURKBOT_GATEWAY_TOKEN=gw-tok-9\n",
        )
        .unwrap();
        assert_eq!(
            Secrets::load(&home).redaction_values(),
            vec!["sk-home-key-1".to_string(), "gw-tok-9".to_string()]
        );
    }

    #[test]
    fn malformed_lines_are_reported_without_their_content() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let env_dir = home.join("skills/x/secrets");
        std::fs::create_dir_all(&env_dir).unwrap();
        std::fs::write(env_dir.join(".env"), "GOOD=1\nBAD LINE sEcReTvAlUe\n").unwrap();
        let s = Secrets::load(&home);
        assert_eq!(s.problems().len(), 1);
        assert!(
            !s.problems()[0].contains("sEcReTvAlUe"),
            "{:?}",
            s.problems()
        );
    }
}
