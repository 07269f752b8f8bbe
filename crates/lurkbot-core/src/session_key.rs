//! Session keys (ARCHITECTURE.md §5): `agent:<id>:main`, `agent:<id>:dm:<channel>:<peer>`,
//! `agent:<id>:group:<channel>:<group>`, `agent:<id>:topic:<channel>:<group>:<thread>`,
//! `agent:<id>:subagent:<child>`, `cron:<jobId>`, `hook:<uuid>`.

use std::fmt;

/// Longest accepted key.
const MAX_LEN: usize = 256;

/// A validated session key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey(String);

/// Why a session key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid session key '{key}': {reason}; expected e.g. agent:main:main, agent:<id>:dm:<channel>:<peer>, cron:<jobId> or hook:<uuid>"
)]
pub struct SessionKeyError {
    /// The key as given.
    pub key: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl SessionKey {
    /// The default session, `agent:main:main`.
    pub fn main() -> Self {
        Self("agent:main:main".into())
    }

    /// Validates a key.
    ///
    /// # Errors
    /// [`SessionKeyError`] when the key has an unknown shape, empty parts, whitespace, control
    /// characters, path separators, or is longer than 256 characters.
    pub fn parse(raw: &str) -> Result<Self, SessionKeyError> {
        let err = |reason| SessionKeyError {
            key: raw.chars().take(MAX_LEN).collect(),
            reason,
        };
        if raw.len() > MAX_LEN {
            return Err(err("it is longer than 256 characters"));
        }
        if raw
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/' || c == '\\')
        {
            return Err(err(
                "it contains whitespace, control characters or path separators",
            ));
        }
        let parts: Vec<&str> = raw.split(':').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(err("it has an empty part"));
        }
        let ok = match parts.as_slice() {
            ["cron" | "hook", _] => true,
            ["agent", id, rest @ ..] => {
                is_agent_id(id)
                    && matches!(
                        rest,
                        ["main"]
                            | ["dm", _, _]
                            | ["group", _, _]
                            | ["topic", _, _, _]
                            | ["subagent", _]
                    )
            }
            _ => false,
        };
        if ok {
            Ok(Self(raw.to_string()))
        } else {
            Err(err("unknown shape"))
        }
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is a group or topic session (`agent:<id>:group:…`, `agent:<id>:topic:…`),
    /// which must not see the owner's private memory or other sessions (ARCHITECTURE.md §4.6).
    pub fn is_group(&self) -> bool {
        let mut parts = self.0.split(':');
        parts.next() == Some("agent") && matches!(parts.nth(1), Some("group" | "topic"))
    }

    /// Whether this is an agent's main session (`agent:<id>:main`).
    pub fn is_main(&self) -> bool {
        let parts: Vec<&str> = self.0.split(':').collect();
        matches!(parts.as_slice(), ["agent", _, "main"])
    }

    /// Where the session's turns come from, as a metric's `source` label (ARCHITECTURE.md
    /// §6.4): `webchat` for an agent's main session, the channel of a direct, group or topic
    /// session when it is a known one (else `channel`), `subagent`, `cron` or `hook` — a
    /// fixed set, never the key itself.
    pub fn source(&self) -> &'static str {
        const CHANNELS: &[&str] = &[
            "api", "webchat", "telegram", "discord", "slack", "matrix", "email", "irc", "whatsapp",
            "signal",
        ];
        let parts: Vec<&str> = self.0.split(':').collect();
        match parts.as_slice() {
            ["cron", _] => "cron",
            ["hook", _] => "hook",
            ["agent", _, "main"] => "webchat",
            ["agent", _, "subagent", _] => "subagent",
            ["agent", _, _, channel, ..] => CHANNELS
                .iter()
                .find(|c| *c == channel)
                .copied()
                .unwrap_or("channel"),
            _ => "other",
        }
    }

    /// The agent id for `agent:` keys (`main` for cron and hook sessions).
    pub fn agent_id(&self) -> &str {
        self.0
            .strip_prefix("agent:")
            .and_then(|rest| rest.split(':').next())
            .unwrap_or("main")
    }
}

/// Agent ids: lower-case letters, digits, `-` and `_`.
fn is_agent_id(id: &str) -> bool {
    id.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_one_of_a_fixed_set() {
        for (key, source) in [
            ("agent:main:main", "webchat"),
            ("agent:ops:dm:telegram:42", "telegram"),
            ("agent:main:dm:api:p1", "api"),
            ("agent:main:group:irc:#lurk", "irc"),
            ("agent:main:topic:slack:C1:T9", "slack"),
            ("agent:main:dm:someone-elses-plugin:x", "channel"),
            ("agent:main:subagent:c1", "subagent"),
            ("cron:job1", "cron"),
            ("hook:0b6f", "hook"),
        ] {
            assert_eq!(SessionKey::parse(key).unwrap().source(), source, "{key}");
        }
    }

    #[test]
    fn accepts_documented_shapes() {
        for k in [
            "agent:main:main",
            "agent:ops:dm:telegram:42",
            "agent:main:group:irc:#lurk",
            "agent:main:topic:slack:C1:T9",
            "agent:main:subagent:c1",
            "cron:job1",
            "hook:0b6c",
        ] {
            assert_eq!(SessionKey::parse(k).unwrap().as_str(), k);
        }
        assert_eq!(
            SessionKey::parse("agent:ops:main").unwrap().agent_id(),
            "ops"
        );
        assert_eq!(SessionKey::parse("cron:x").unwrap().agent_id(), "main");
        assert!(
            SessionKey::parse("agent:main:group:irc:x")
                .unwrap()
                .is_group()
        );
        assert!(
            SessionKey::parse("agent:main:topic:s:c:t")
                .unwrap()
                .is_group()
        );
        assert!(!SessionKey::parse("agent:main:main").unwrap().is_group());
        assert!(
            !SessionKey::parse("agent:main:dm:irc:group")
                .unwrap()
                .is_group()
        );
    }

    #[test]
    fn refuses_other_shapes() {
        for k in [
            "",
            "main",
            "agent:main",
            "agent::main",
            "agent:Main:main",
            "agent:main:dm:x",
            "x:y",
            "agent:main:main ",
            "cron:a/b",
            "cron:a:b",
        ] {
            assert!(SessionKey::parse(k).is_err(), "{k}");
        }
        assert!(SessionKey::parse(&format!("cron:{}", "a".repeat(300))).is_err());
    }
}
