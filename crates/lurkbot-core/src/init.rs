//! `lurkbot init`: creates the home layout, the commented config and the bootstrap files,
//! never touching a file that already exists.

use crate::{CoreError, Home, layout, templates, write_new_atomic};

/// What `init` did, as home-relative paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitReport {
    /// Files and directories created.
    pub created: Vec<String>,
    /// Files that existed and were left as they were.
    pub kept: Vec<String>,
}

/// Creates the layout under `home`. Safe to run again: existing files are kept byte for byte.
/// `extra_files` (home-relative path, content) lets the binary add generated files such as
/// bundled skills under the same rule.
///
/// # Errors
/// A directory or file cannot be created.
pub fn init_home(home: &Home, extra_files: &[(String, String)]) -> Result<InitReport, CoreError> {
    init_layout(home, extra_files, true)
}

/// Creates a user's home on a shared gateway (ARCHITECTURE.md §6.2): the layout, bootstrap
/// files and `extra_files` of [`init_home`], but no `config.toml` — the gateway's settings are
/// shared and only the admin changes them.
///
/// # Errors
/// A directory or file cannot be created.
pub fn init_member_home(
    home: &Home,
    extra_files: &[(String, String)],
) -> Result<InitReport, CoreError> {
    init_layout(home, extra_files, false)
}

fn init_layout(
    home: &Home,
    extra_files: &[(String, String)],
    with_config: bool,
) -> Result<InitReport, CoreError> {
    let mut report = InitReport::default();
    for dir in layout::DIRS {
        let path = home.join(dir);
        if !path.is_dir() {
            std::fs::create_dir_all(&path)
                .map_err(|e| CoreError::io("create directory", &path, e))?;
            report.created.push(format!("{dir}/"));
        }
    }
    let config = templates::CONFIG.replace("@TOKEN@", &crate::random_hex(24));
    let mut files: Vec<(String, &str, u32)> = Vec::new();
    if with_config {
        files.push((layout::CONFIG.to_string(), config.as_str(), 0o600));
    }
    for (name, content) in templates::BOOTSTRAP {
        files.push((format!("{}/{name}", layout::WORKSPACE), content, 0o600));
    }
    for (path, content) in extra_files {
        files.push((path.clone(), content.as_str(), 0o600));
    }
    // Every skill gets a secrets folder, private (0700) when init makes it, so its `.env` has a
    // place to go.
    for (path, _) in extra_files {
        let Some(skill) = path
            .strip_prefix("skills/")
            .and_then(|p| p.strip_suffix("/SKILL.md"))
        else {
            continue;
        };
        let rel = format!("skills/{skill}/secrets");
        let dir = home.join(&rel);
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir)
                .map_err(|e| CoreError::io("create directory", &dir, e))?;
            set_private_dir(&dir)?;
            report.created.push(format!("{rel}/"));
        }
    }
    for (rel, content, mode) in files {
        if write_new_atomic(&home.join(&rel), content.as_bytes(), mode)? {
            report.created.push(rel);
        } else {
            report.kept.push(rel);
        }
    }
    Ok(report)
}

/// Makes `dir` private to its owner (0700).
fn set_private_dir(dir: &std::path::Path) -> Result<(), CoreError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| CoreError::io("restrict", dir, e))
}

/// Whether `bytes` is workspace bootstrap file `name` exactly as `init` wrote it (an importer
/// may replace such a file: the user never changed it).
pub fn is_untouched_bootstrap(name: &str, bytes: &[u8]) -> bool {
    templates::BOOTSTRAP
        .iter()
        .any(|(n, content)| *n == name && content.as_bytes() == bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn creates_layout_then_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(&dir.path().join("home")).unwrap();
        let first = init_home(&home, &[("skills/x/SKILL.md".into(), "x".into())]).unwrap();
        assert!(first.kept.is_empty());
        for f in [
            "config.toml",
            "workspace/AGENTS.md",
            "workspace/BOOTSTRAP.md",
            "skills/x/SKILL.md",
            "artifacts/terminal_exec/runs/",
        ] {
            assert!(
                first.created.iter().any(|c| c == f),
                "{f} not in {:?}",
                first.created
            );
        }
        let config = Config::load(&home.config_path()).unwrap();
        assert_eq!(config.gateway.token.as_deref().map(str::len), Some(48));
        std::fs::write(home.join("workspace/SOUL.md"), "mine").unwrap();
        let second = init_home(&home, &[]).unwrap();
        assert!(second.created.is_empty(), "{:?}", second.created);
        assert_eq!(
            std::fs::read_to_string(home.join("workspace/SOUL.md")).unwrap(),
            "mine"
        );
        assert_eq!(
            Config::load(&home.config_path()).unwrap().gateway.token,
            config.gateway.token
        );
    }
}
