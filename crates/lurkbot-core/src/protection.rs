//! The protection model (ARCHITECTURE.md §4.6): which places in the home no command or tool may read
//! or write, decided on the **resolved** path.
//!
//! - *Secret* — never read by a tool, never added to an archive, never written by a command:
//!   `config.toml` and its temporary copies, every `.env` anywhere, `skills/*/secrets/**`,
//!   `browser/**` (the browser's profile: cookies, logins), `users/**` (on a shared gateway, the
//!   other users' homes and the sign-in records: not even the admin's tools read them).
//! - *State* — written only by the code that owns it: `exec-approvals.json`, `auth/**`,
//!   `sessions/**`, `cron/**`, `memory/**`, `artifacts/terminal_exec/**`,
//!   `workspace/cal/calendar.db*`, `workspace/rss/*.json` and `cache/**`, `workspace/irc/**`,
//!   `channels/**` (pairings, who may write to the agent), `devices/**` (paired nodes; this
//!   node's own `devices/identity.json` is *secret*), and every temporary file of the atomic writers, extractions and archive creation.
//!
//! [`Home::protection`] is the one function every reader and writer calls. It follows every
//! symbolic link, and treats a hard link to a protected file as that file (device + inode).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::{Home, HomePath, PathError, SessionKey};

/// File name of the allow-always decisions (OpenClaw's name), at the home root.
pub const APPROVALS_FILE: &str = "exec-approvals.json";

/// The owner's skill approvals (`lurkbot skills approve`), at the home's root.
pub const SKILL_APPROVALS_FILE: &str = "skills-approved.json";

/// What a path outside the home counts as.
const OUTSIDE: Protection = Protection::Secret("it lies outside the LurkBot home");

/// Most directory entries looked at when searching for the protected twin of a hard-linked
/// file; past it the file is treated as protected (fail closed).
const HARD_LINK_SCAN_LIMIT: usize = 20_000;

/// How a place in the home is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Any command or tool may read and write it (within the usual confinement).
    Free,
    /// Owned by one part of LurkBot: readable, never written by a generic writer.
    State(&'static str),
    /// Never read by a tool, archived, or written by a command.
    Secret(&'static str),
}

impl Protection {
    /// Whether a tool or command may read the place (and put it in an archive).
    pub fn readable(self) -> bool {
        !matches!(self, Self::Secret(_))
    }

    /// Whether a generic writer (`--out`, extract, `write`/`edit`/`apply_patch`) may write it.
    pub fn writable(self) -> bool {
        matches!(self, Self::Free)
    }

    /// Why the place is protected (`None` when free).
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Self::Free => None,
            Self::State(why) | Self::Secret(why) => Some(why),
        }
    }
}

/// A refused access: the path escapes, or it is protected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// The path escapes the home or is unusable.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The resolved path is protected.
    #[error("'{path}' cannot be {action}: {reason}")]
    Protected {
        /// The path as given.
        path: String,
        /// "read" or "written".
        action: &'static str,
        /// Why (from [`Protection::reason`]).
        reason: &'static str,
    },
}

/// The protection of a home-relative, resolved, `/`-separated path, by name alone.
pub fn classify_relative(relative: &str) -> Protection {
    use Protection::{Free, Secret, State};
    let segments: Vec<&str> = relative.split('/').filter(|s| !s.is_empty()).collect();
    let Some(last) = segments.last().copied() else {
        return Free;
    };
    if segments.iter().any(|s| is_env_name(s)) {
        return Secret(".env files hold keys and tokens and are edited only by hand");
    }
    match segments.as_slice() {
        ["browser", ..] => {
            return Secret(
                "the browser's profile holds cookies and logins and is used only by Chromium",
            );
        }
        ["config.toml"] => {
            return Secret(
                "config.toml holds the gateway token and is changed only with 'lurkbot config set' or by hand",
            );
        }
        [name] if is_temp_of(name, "config.toml") => {
            return Secret("a temporary copy of config.toml holds the gateway token");
        }
        ["skills", _, "secrets", ..] => {
            return Secret("skill secrets are edited only by hand and never leave the home");
        }
        ["devices", "identity.json"] => {
            return Secret("this node's private key proves who it is to the gateway it serves");
        }
        ["users", ..] => {
            return Secret(
                "users/ holds the other users' homes and sign-in records; each user's files are theirs alone",
            );
        }
        _ => {}
    }
    if is_temp_name(last) || segments.iter().any(|s| s.starts_with(".lurkbot-")) {
        return State("temporary files of LurkBot's writers are written only by them");
    }
    match segments.as_slice() {
        [APPROVALS_FILE] => State("approval decisions are made only by the human"),
        [SKILL_APPROVALS_FILE] => {
            State("skills are approved only by the owner with 'lurkbot skills approve'")
        }
        ["auth", ..] => State("auth state is written only by the agent runtime"),
        ["sessions", ..] => State("session transcripts are written only by the agent runtime"),
        ["cron", ..] => State("cron jobs are changed only with 'lurkbot cron' or the cron tool"),
        ["channels", ..] => {
            State("channel pairings are changed only with 'lurkbot pairing' or by the gateway")
        }
        ["memory", ..] => State("the memory index is written only by 'lurkbot memory'"),
        ["state", ..] => State(
            "the turn journal and the outbox are written only by the gateway (see 'lurkbot outbox')",
        ),
        ["devices", ..] => {
            State("paired devices are changed only with 'lurkbot devices' or by the gateway")
        }
        ["logs", ..] => State("LurkBot's logs are written only by LurkBot"),
        [crate::PLUGINS_DIR, ..] => State(
            "plugins are the owner's programs: installed and changed only by the owner, by hand",
        ),
        ["history", ..] => State("chat history is written only by lurkbot chat"),
        ["run", ..] => State("the running gateway's address is written only by the gateway"),
        ["artifacts", "terminal_exec", ..] => {
            State("the terminal_exec audit log is written only by terminal_exec")
        }
        ["artifacts", "images", ..] => {
            State("images shown to the model are written only by the image tool")
        }
        ["workspace", "cal", db] if db.starts_with("calendar.db") => {
            State("the calendar is changed only with the cal command")
        }
        ["workspace", "rss", file] if file.ends_with(".json") => {
            State("feed subscriptions are changed only with the rss command")
        }
        ["workspace", "rss", "cache", ..] => State("the feed cache is written only by rss fetch"),
        ["workspace", "irc", ..] => State("IRC logs are written only by the irc command"),
        _ => Free,
    }
}

/// Whether a group or topic session must not read this home-relative path: the owner's private
/// memory (`workspace/MEMORY.md`, `workspace/memory/**`).
pub fn is_private_memory(relative: &str) -> bool {
    let segments: Vec<&str> = relative.split('/').filter(|s| !s.is_empty()).collect();
    matches!(
        segments.as_slice(),
        ["workspace", "MEMORY.md"] | ["workspace", "memory", ..]
    )
}

/// `.env`, its dotenv variants (`.env.local`, `.env.production`, …) and the temporary copies
/// an atomic writer makes of it.
fn is_env_name(name: &str) -> bool {
    name == ".env" || name.starts_with(".env.") || is_temp_of(name, ".env")
}

/// `.<target>.tmp-…`: the temporary copy [`crate::write_atomic`] makes of `target`.
fn is_temp_of(name: &str, target: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_prefix(target))
        .is_some_and(|rest| rest.starts_with(".tmp-"))
}

/// A temporary file of the atomic writers (`.<name>.tmp-<hex>`), of archive creation
/// (`.lurkbot-new-*`) or of an extraction's staging folder (`.lurkbot-extract-*`).
pub(crate) fn is_temp_name(name: &str) -> bool {
    (name.starts_with('.') && name.contains(".tmp-")) || name.starts_with(".lurkbot-")
}

impl Home {
    /// The protection of an absolute path inside the home, after following every symbolic
    /// link; a regular file with more than one hard link is compared (device + inode) with the
    /// protected files. A path outside the home is treated as secret.
    pub fn protection(&self, absolute: &Path) -> Protection {
        self.protection_inside(absolute).unwrap_or(OUTSIDE)
    }

    /// Like [`Home::protection`], but `None` when the path resolves outside the home (for
    /// callers with their own answer to that, such as extraction's link checks).
    pub fn protection_inside(&self, absolute: &Path) -> Option<Protection> {
        self.classify_resolved(absolute).map(|(_, p)| p)
    }

    /// [`Home::protection`] as seen by `session`: for a group or topic session the owner's
    /// private memory (`workspace/MEMORY.md`, `workspace/memory/**`) is secret too.
    pub fn protection_for(&self, absolute: &Path, session: &SessionKey) -> Protection {
        self.protection_seen_by(absolute, !session.is_group())
    }

    /// [`Home::protection`] for a reader that may (`private_memory`) or may not see the owner's
    /// private memory: a session of anyone but the owner may not.
    pub fn protection_seen_by(&self, absolute: &Path, private_memory: bool) -> Protection {
        match self.classify_resolved(absolute) {
            None => OUTSIDE,
            Some((relative, Protection::Free))
                if !private_memory && is_private_memory(&relative) =>
            {
                Protection::Secret(
                    "the owner's private memory is not shared with groups or other people's conversations",
                )
            }
            Some((_, protection)) => protection,
        }
    }

    /// Resolves `absolute` once (links followed) and classifies it: its home-relative form and
    /// protection, or `None` outside the home.
    fn classify_resolved(&self, absolute: &Path) -> Option<(String, Protection)> {
        let resolved = resolve_existing_prefix(absolute);
        let relative = self.relative(&resolved)?;
        let by_name = classify_relative(&relative);
        let protection = if by_name == Protection::Free {
            self.hard_link_protection(&resolved).unwrap_or(by_name)
        } else {
            by_name
        };
        Some((relative, protection))
    }

    /// Resolves `raw` for reading: confined to the home and not secret.
    ///
    /// # Errors
    /// [`AccessError::Path`] or [`AccessError::Protected`].
    pub fn resolve_readable(&self, raw: &str) -> Result<HomePath, AccessError> {
        let path = self.resolve(raw)?;
        match self.protection(path.absolute()) {
            p if p.readable() => Ok(path),
            p => Err(protected(raw, "read", p)),
        }
    }

    /// Resolves `raw` for writing by a generic writer: confined and neither secret nor state.
    ///
    /// # Errors
    /// [`AccessError::Path`] or [`AccessError::Protected`].
    pub fn resolve_writable(&self, raw: &str) -> Result<HomePath, AccessError> {
        let path = self.resolve(raw)?;
        match self.protection(path.absolute()) {
            p if p.writable() => Ok(path),
            p => Err(protected(raw, "written", p)),
        }
    }

    /// The protection a hard-linked regular file inherits from a protected twin, if any.
    fn hard_link_protection(&self, path: &Path) -> Option<Protection> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = std::fs::symlink_metadata(path).ok()?;
            if !meta.is_file() || meta.nlink() < 2 {
                return None;
            }
            let wanted = (meta.dev(), meta.ino());
            let mut seen = 0usize;
            let mut stack: Vec<PathBuf> = vec![self.root().to_path_buf()];
            let mut visited = HashSet::new();
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    seen += 1;
                    if seen > HARD_LINK_SCAN_LIMIT {
                        return Some(Protection::Secret(
                            "a hard-linked file in a home too large to check is treated as protected",
                        ));
                    }
                    let Ok(m) = entry.metadata() else { continue };
                    let entry_path = entry.path();
                    if m.is_dir() {
                        if visited.insert((m.dev(), m.ino())) {
                            stack.push(entry_path);
                        }
                        continue;
                    }
                    if (m.dev(), m.ino()) != wanted || entry_path == path {
                        continue;
                    }
                    let twin = self
                        .relative(&entry_path)
                        .map(|r| classify_relative(&r))
                        .unwrap_or(Protection::Free);
                    if twin != Protection::Free {
                        return Some(twin);
                    }
                }
            }
            None
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None
        }
    }
}

fn protected(raw: &str, action: &'static str, p: Protection) -> AccessError {
    AccessError::Protected {
        path: raw.to_string(),
        action,
        reason: p.reason().unwrap_or("it is protected"),
    }
}

/// `path` with its longest existing prefix canonicalised (symbolic links followed) and the
/// missing rest appended as written.
fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canon) = existing.canonicalize() {
            let mut out = canon;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_resolved_name() {
        use Protection::*;
        for secret in [
            "config.toml",
            ".config.toml.tmp-ab12",
            ".env",
            "workspace/proj/.env",
            "workspace/..env.tmp-1",
            "workspace/app/.env.local",
            "skills/irc-cli/secrets",
            "skills/irc-cli/secrets/.env.example",
            "devices/identity.json",
            "users",
            "users/users.json",
            "users/alice/sessions/main/x.jsonl",
            "users/alice/workspace/notes.md",
        ] {
            assert!(matches!(classify_relative(secret), Secret(_)), "{secret}");
        }
        for state in [
            "exec-approvals.json",
            "auth/profiles.json",
            "sessions/main/x.jsonl",
            "sessions",
            "cron/jobs.json",
            "channels/pairing.json",
            "channels/telegram/state.json",
            "devices/paired.json",
            "devices",
            "memory/index.sqlite",
            "state",
            "state/state.sqlite",
            "state/state.sqlite-wal",
            "logs/gateway.log",
            "logs/gateway.log.1",
            "run/gateway.json",
            // A plugin's program: never written by the model's writers.
            "plugins/echo/main.py",
            "plugins/echo/lurkbot-plugin.toml",
            "plugins",
            "history/chat.txt",
            "artifacts/terminal_exec/runs/x.json",
            "workspace/cal/calendar.db",
            "workspace/cal/calendar.db-journal",
            "workspace/rss/subscriptions.json",
            "workspace/rss/cache/news.json",
            "workspace/irc/sessions/a/inbound.jsonl",
            "workspace/.notes.md.tmp-1a2b",
            "artifacts/.lurkbot-new-x1",
            "workspace/.lurkbot-extract-q/0",
        ] {
            assert!(matches!(classify_relative(state), State(_)), "{state}");
        }
        for free in [
            "",
            "workspace/config.toml",
            "workspace/notes.md",
            "artifacts/zip/list.json",
            "workspace/rss/notes/x.json",
            "workspace/cal/other.ics",
            "skills/irc-cli/SKILL.md",
            "workspace/env",
        ] {
            assert_eq!(classify_relative(free), Free, "{free}");
        }
        assert!(is_private_memory("workspace/MEMORY.md"));
        assert!(is_private_memory("workspace/memory/2026-01-01.md"));
        assert!(!is_private_memory("workspace/AGENTS.md"));
    }

    #[cfg(unix)]
    #[test]
    fn follows_symbolic_and_hard_links() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let home = Home::open(dir.path())?;
        std::fs::create_dir_all(home.join("workspace"))?;
        std::fs::write(home.join("config.toml"), "[gateway]\ntoken='t'\n")?;
        std::fs::write(home.join("workspace/free.txt"), "x")?;
        std::os::unix::fs::symlink("..", home.join("workspace/homelink"))?;
        std::fs::hard_link(home.join("config.toml"), home.join("workspace/hardcfg"))?;
        std::fs::hard_link(home.join("workspace/free.txt"), home.join("workspace/twin"))?;

        let via_link = home.resolve("workspace/homelink/config.toml")?;
        assert!(matches!(
            home.protection(via_link.absolute()),
            Protection::Secret(_)
        ));
        let new_state = home.resolve("workspace/homelink/exec-approvals.json")?;
        assert!(matches!(
            home.protection(new_state.absolute()),
            Protection::State(_)
        ));
        assert!(matches!(
            home.resolve_readable("workspace/hardcfg"),
            Err(AccessError::Protected { .. })
        ));
        assert!(home.resolve_readable("workspace/twin").is_ok());
        assert!(home.resolve_writable("workspace/new.txt").is_ok());
        assert!(matches!(
            home.resolve_writable("workspace/homelink/sessions/main/x.jsonl"),
            Err(AccessError::Protected { .. })
        ));
        Ok(())
    }
}
