//! Whether a skill's requirements hold here: its operating systems, programs on `PATH`,
//! variables (the environment, the home's `.env`, the skill's own `secrets/.env`) and settings
//! (a dotted key of config.toml that is set and not false, 0 or empty). LurkBot itself runs no
//! host programs; a skill that needs one is offered when the program exists, for use through an
//! MCP server that provides it.

use std::path::PathBuf;

use lurkbot_core::{Config, Secrets};
use serde_json::Value;

use super::manifest::Requirements;

/// What the checks look at, read once; the config's JSON form only when a skill asks for a
/// setting.
pub(super) struct Check<'a> {
    path: Vec<PathBuf>,
    secrets: &'a Secrets,
    config: &'a Config,
    config_value: std::sync::OnceLock<Value>,
}

/// This system's names in OpenClaw's (`process.platform`) and Hermes Agent's spelling.
fn os_names() -> &'static [&'static str] {
    match std::env::consts::OS {
        "macos" => &["darwin", "macos"],
        "windows" => &["win32", "windows"],
        "linux" => &["linux"],
        _ => &[],
    }
}

impl<'a> Check<'a> {
    pub(super) fn new(config: &'a Config, secrets: &'a Secrets) -> Self {
        Self {
            path: std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
            secrets,
            config,
            config_value: std::sync::OnceLock::new(),
        }
    }

    /// The first unmet requirement, in words; `None` when all hold.
    pub(super) fn missing(&self, skill: &str, r: &Requirements) -> Option<String> {
        if !r.os.is_empty() && !r.os.iter().any(|os| os_names().contains(&os.as_str())) {
            return Some(format!(
                "runs on {} only (this is {})",
                r.os.join(", "),
                std::env::consts::OS
            ));
        }
        let absent: Vec<&str> = r
            .bins
            .iter()
            .map(String::as_str)
            .filter(|b| !self.on_path(b))
            .collect();
        if !absent.is_empty() {
            return Some(format!(
                "needs the program(s) {} on PATH",
                absent.join(", ")
            ));
        }
        if !r.any_bins.is_empty() && !r.any_bins.iter().any(|b| self.on_path(b)) {
            return Some(format!(
                "needs one of the programs {} on PATH",
                r.any_bins.join(", ")
            ));
        }
        let unset: Vec<&str> = r
            .env
            .iter()
            .map(String::as_str)
            .filter(|v| !self.variable_set(skill, v))
            .collect();
        if !unset.is_empty() {
            return Some(format!(
                "needs {} (in the home's .env or skills/{skill}/secrets/.env)",
                unset.join(", ")
            ));
        }
        let off: Vec<&str> = r
            .config
            .iter()
            .map(String::as_str)
            .filter(|k| !self.setting_on(k))
            .collect();
        if !off.is_empty() {
            return Some(format!(
                "needs the setting(s) {} in config.toml",
                off.join(", ")
            ));
        }
        None
    }

    fn on_path(&self, program: &str) -> bool {
        if program.is_empty() || program.contains('/') {
            return false;
        }
        self.path.iter().any(|dir| {
            let candidate = dir.join(program);
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(&candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            }
            #[cfg(not(unix))]
            {
                candidate.is_file()
            }
        })
    }

    fn variable_set(&self, skill: &str, name: &str) -> bool {
        let set = |v: &str| !v.trim().is_empty();
        std::env::var(name).is_ok_and(|v| set(&v))
            || self.secrets.home_variable(name).is_some_and(set)
            || self
                .secrets
                .skill(skill)
                .and_then(|vars| vars.get(name))
                .is_some_and(|v| set(v))
    }

    fn setting_on(&self, key: &str) -> bool {
        let config = self
            .config_value
            .get_or_init(|| serde_json::to_value(self.config).unwrap_or(Value::Null));
        let value = key.split('.').try_fold(config, |v, part| v.get(part));
        match value {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lurkbot_core::Home;

    #[test]
    fn requirements_are_checked_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::open(dir.path()).expect("home");
        std::fs::write(home.join(".env"), "HOME_TOKEN=x\nEMPTY=\n").expect("env");
        let config = Config::parse(
            std::path::Path::new("c.toml"),
            "[network]\nallow_private = true\n",
        )
        .expect("config");
        let secrets = Secrets::load(&home);
        let check = Check::new(&config, &secrets);
        let need = |f: fn(&mut Requirements)| {
            let mut r = Requirements::default();
            f(&mut r);
            check.missing("s", &r)
        };
        assert_eq!(need(|_| {}), None);
        assert!(
            need(|r| r.os = vec!["darwin".into()])
                .unwrap()
                .contains("runs on darwin only")
        );
        assert_eq!(need(|r| r.os = vec!["linux".into(), "macos".into()]), None);
        assert_eq!(need(|r| r.bins = vec!["sh".into()]), None);
        assert!(
            need(|r| r.bins = vec!["sh".into(), "no-such-program-x".into()])
                .unwrap()
                .contains("no-such-program-x on PATH")
        );
        assert_eq!(
            need(|r| r.any_bins = vec!["no-such-x".into(), "sh".into()]),
            None
        );
        assert_eq!(need(|r| r.env = vec!["HOME_TOKEN".into()]), None);
        assert!(
            need(|r| r.env = vec!["EMPTY".into()])
                .unwrap()
                .contains("needs EMPTY")
        );
        assert_eq!(
            need(|r| r.config = vec!["network.allow_private".into()]),
            None
        );
        assert!(
            need(|r| r.config = vec!["channels.discord.token".into()])
                .unwrap()
                .contains("channels.discord.token")
        );
    }
}
