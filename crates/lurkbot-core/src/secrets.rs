//! Skill credentials from `skills/<skill>/secrets/.env` (dotenv), and the list of secret values
//! that must never appear in any output.
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
    problems: Vec<String>,
}

impl Secrets {
    /// Reads `skills/*/secrets/.env` under the home. Unreadable or malformed files are recorded
    /// in [`Secrets::problems`] (by path and line, never by value) and skipped.
    pub fn load(home: &Home) -> Self {
        let mut secrets = Self::default();
        let Ok(entries) = std::fs::read_dir(home.join(layout::SKILLS)) else {
            return secrets;
        };
        for entry in entries.flatten() {
            let env_path = entry.path().join("secrets/.env");
            if !env_path.is_file() {
                continue;
            }
            let skill = entry.file_name().to_string_lossy().into_owned();
            let mut vars = BTreeMap::new();
            match dotenvy::from_path_iter(&env_path) {
                Ok(iter) => {
                    for item in iter {
                        match item {
                            Ok((k, v)) => {
                                vars.insert(k, v);
                            }
                            Err(e) => secrets.problems.push(format!(
                                "{}: {}",
                                env_path.display(),
                                describe(&e)
                            )),
                        }
                    }
                }
                Err(e) => {
                    secrets
                        .problems
                        .push(format!("{}: {}", env_path.display(), describe(&e)))
                }
            }
            secrets.by_skill.insert(skill, vars);
        }
        secrets
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
            .flat_map(|vars| vars.iter())
            .filter(|(k, v)| is_secret_name(k) && v.chars().count() >= MIN_REDACTED_LEN)
            .map(|(_, v)| v.clone())
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        values
    }
}

/// Whether a variable name marks a secret.
fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["PASS", "TOKEN", "SECRET", "KEY", "CREDENTIAL", "AUTH"]
        .iter()
        .any(|w| n.contains(w))
}

/// A dotenv error without the offending line's content (it may hold a secret).
fn describe(e: &dotenvy::Error) -> String {
    match e {
        dotenvy::Error::LineParse(_, index) => format!("malformed line (at character {index})"),
        dotenvy::Error::Io(io) => io.to_string(),
        _ => "unreadable".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
