//! The LurkBot home (`LURKBOT_HOME`, default `~/.lurkbot`): the agents root every path is
//! relative to.

use std::path::{Path, PathBuf};

use crate::create_private_dir;
use crate::{CoreError, HomePath, PathError};

/// Relative locations inside the home (ARCHITECTURE.md §2).
pub mod layout {
    /// Settings file (mode 0600).
    pub const CONFIG: &str = "config.toml";
    /// The agent workspace with its bootstrap files.
    pub const WORKSPACE: &str = "workspace";
    /// Daily memory notes inside the workspace.
    pub const WORKSPACE_MEMORY: &str = "workspace/memory";
    /// `rss` state: `subscriptions.json`, `fetch_state.json`, `cache/<name>.json`.
    pub const RSS: &str = "workspace/rss";
    /// Products of `--out` flags, one folder per command.
    pub const ARTIFACTS: &str = "artifacts";
    /// One audit JSON per `terminal_exec` run.
    pub const AUDIT_RUNS: &str = "artifacts/terminal_exec/runs";
    /// Installed skills; `skills/<name>/secrets/.env` holds a skill's credentials.
    pub const SKILLS: &str = "skills";
    /// Session stores and transcripts.
    pub const SESSIONS: &str = "sessions";
    /// Cron jobs and their run logs.
    pub const CRON: &str = "cron";
    /// Auth profile usage state.
    pub const AUTH: &str = "auth";
    /// Memory index.
    pub const MEMORY: &str = "memory";
    /// Channel state: pairings and each platform's resume point.
    pub const CHANNELS: &str = "channels";
    /// The durable state (`state.sqlite`): the turn journal, inbound records, the outbox.
    pub const STATE: &str = "state";
    /// The running gateway's address (`gateway.json`), for the CLI to find it.
    pub const RUN: &str = "run";
    /// The gateway's log files (`gateway.log` and its rotated copies).
    pub const LOGS: &str = "logs";
    /// On a shared gateway: `users.json` (who may sign in) and each user's home, `<name>/`.
    pub const USERS: &str = "users";
    /// Every directory `lurkbot init` creates.
    pub const DIRS: &[&str] = &[
        WORKSPACE,
        WORKSPACE_MEMORY,
        ARTIFACTS,
        AUDIT_RUNS,
        SKILLS,
        SESSIONS,
        CRON,
        AUTH,
        MEMORY,
    ];
}

/// An opened home directory: its absolute path and its canonical form (symlinks resolved), which
/// is what confinement checks compare against.
#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
    /// On a shared gateway, the gateway's own home, whose `.env` supplies the variables a
    /// user's home lacks (the provider keys the admin shares); `None` for the gateway's home.
    shared: Option<PathBuf>,
}

impl Home {
    /// The home to use: `explicit` (from `--home` / `LURKBOT_HOME`) or `~/.lurkbot`.
    /// A relative path is taken from the current directory.
    ///
    /// # Errors
    /// [`CoreError::NoHome`] when no explicit path is given and `$HOME` is unknown.
    pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, CoreError> {
        let chosen = match explicit {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::env::home_dir()
                .filter(|h| !h.as_os_str().is_empty())
                .map(|h| h.join(".lurkbot"))
                .ok_or(CoreError::NoHome)?,
        };
        if chosen.is_absolute() {
            return Ok(chosen);
        }
        let cwd =
            std::env::current_dir().map_err(|e| CoreError::io("read current directory", ".", e))?;
        Ok(cwd.join(chosen))
    }

    /// Opens the home at `root`, creating the directory (mode 0700) if it does not exist.
    ///
    /// # Errors
    /// The directory cannot be created or resolved.
    pub fn open(root: &Path) -> Result<Self, CoreError> {
        if !root.exists() {
            create_private_dir(root)?;
        }
        let root = root
            .canonicalize()
            .map_err(|e| CoreError::io("resolve", root, e))?;
        Ok(Self { root, shared: None })
    }

    /// The home of user `name` on a shared gateway (ARCHITECTURE.md §6.2): `users/<name>/`
    /// under this one, created private when missing. `name` must already be a valid user name
    /// (one path segment).
    ///
    /// # Errors
    /// The name is not one plain path segment, or the directory cannot be created.
    pub fn member(&self, name: &str) -> Result<Self, CoreError> {
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !plain {
            return Err(CoreError::Invalid(format!(
                "'{name}' is not a user name (letters, digits, '-' and '_')"
            )));
        }
        let users = self.join(layout::USERS);
        if !users.exists() {
            create_private_dir(&users)?;
        }
        let mut home = Self::open(&users.join(name))?;
        home.shared = Some(self.root.clone());
        Ok(home)
    }

    /// The gateway's own home when this is a user's home on a shared gateway.
    pub fn shared(&self) -> Option<&Path> {
        self.shared.as_deref()
    }

    /// The canonical absolute path of the home.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of a layout entry (no confinement check: for the crate's own constants).
    pub fn join(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// The path of `config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.join(layout::CONFIG)
    }

    /// Resolves a user- or agent-supplied path inside the home (ARCHITECTURE.md §4.4).
    ///
    /// # Errors
    /// [`PathError`] when the path is empty, absolute, has a drive letter or `..`, or resolves
    /// (through symbolic links) outside the home.
    pub fn resolve(&self, raw: &str) -> Result<HomePath, PathError> {
        HomePath::resolve(&self.root, raw)
    }

    /// The file `raw` leads to, resolved as every reader resolves it (links followed, confined
    /// to the home), only when what it resolves to lies under the home folder `dir` — a link
    /// planted there that points at `config.toml` is not one of that folder's files.
    pub fn resolve_under(&self, dir: &str, raw: &str) -> Option<PathBuf> {
        let path = self.resolve(raw).ok()?;
        let resolved = self.relative(path.absolute())?;
        resolved
            .starts_with(&format!("{}/", dir.trim_end_matches('/')))
            .then(|| path.absolute().to_path_buf())
    }

    /// The home-relative form (with `/`) of an absolute path inside the home, if it is inside.
    pub fn relative(&self, abs: &Path) -> Option<String> {
        let rel = abs.strip_prefix(&self.root).ok()?;
        Some(
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_relative_home_is_made_absolute() -> Result<(), CoreError> {
        let p = Home::locate(Some(Path::new("some/where")))?;
        assert!(p.is_absolute() && p.ends_with("some/where"));
        Ok(())
    }

    #[test]
    fn open_creates_a_private_directory() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let home = Home::open(&dir.path().join("h"))?;
        assert!(home.root().is_dir());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(home.root())?.permissions().mode() & 0o777,
                0o700
            );
        }
        assert_eq!(home.relative(&home.join("a/b")).as_deref(), Some("a/b"));
        assert_eq!(home.relative(Path::new("/elsewhere")), None);
        Ok(())
    }
}
