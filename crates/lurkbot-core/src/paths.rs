//! Path confinement: every path argument is relative to the home and must stay inside it.

use std::path::{Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is absolute, has a drive letter or `..`, or resolves outside the home.
    #[error(
        "path '{path}' escapes the LurkBot home: {reason}; use a path relative to the home, e.g. workspace/file.txt"
    )]
    Escapes {
        /// The path as given.
        path: String,
        /// What made it escape.
        reason: &'static str,
    },
    /// An absolute path that names a place inside the home: paths are written relative to the
    /// home (the contract every command and tool shares), and the error gives that form.
    #[error(
        "path '{path}' is absolute; paths are relative to the LurkBot home: write '{relative}'"
    )]
    AbsoluteInside {
        /// The path as given.
        path: String,
        /// The same place, relative to the home.
        relative: String,
    },
    /// The path is empty or contains a NUL character.
    #[error("path '{path}' is not usable: {reason}")]
    Invalid {
        /// The path as given (NUL shown as `\0`).
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// A path confined to the home: its normalised home-relative form and its absolute location
/// (symbolic links inside the home resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomePath {
    relative: String,
    absolute: PathBuf,
}

impl HomePath {
    /// The normalised relative form with `/` separators (`""` for the home itself).
    pub fn relative(&self) -> &str {
        &self.relative
    }

    /// The absolute location to open.
    pub fn absolute(&self) -> &Path {
        &self.absolute
    }

    /// Resolves `raw` against the canonical `root`.
    pub(crate) fn resolve(root: &Path, raw: &str) -> Result<Self, PathError> {
        let escapes = |reason| PathError::Escapes {
            path: raw.to_string(),
            reason,
        };
        if raw.contains('\0') {
            return Err(PathError::Invalid {
                path: raw.replace('\0', "\\0"),
                reason: "it contains a NUL character",
            });
        }
        let path = raw.trim().replace('\\', "/");
        if path.is_empty() {
            return Err(PathError::Invalid {
                path: raw.to_string(),
                reason: "it is empty",
            });
        }
        if path.starts_with('/') {
            let inside = [root.to_path_buf(), root.canonicalize().unwrap_or_default()]
                .iter()
                .find_map(|r| Path::new(&path).strip_prefix(r).ok().map(Path::to_path_buf))
                .filter(|rel| !rel.as_os_str().is_empty())
                .map(|rel| rel.to_string_lossy().replace('\\', "/"))
                .filter(|rel| !rel.split('/').any(|s| s == ".."));
            return Err(match inside {
                Some(relative) => PathError::AbsoluteInside {
                    path: raw.to_string(),
                    relative,
                },
                None => escapes("absolute paths are not allowed"),
            });
        }
        if has_drive_letter(&path) {
            return Err(escapes("drive letters are not allowed"));
        }
        let mut segments = Vec::new();
        for seg in path.split('/') {
            match seg {
                "" | "." => {}
                ".." => return Err(escapes("'..' segments are not allowed")),
                s => segments.push(s),
            }
        }
        let absolute = follow_inside(root, &segments)
            .ok_or_else(|| escapes("it resolves outside the home through a symbolic link"))?;
        Ok(Self {
            relative: segments.join("/"),
            absolute,
        })
    }
}

/// Where `raw` (relative to `folder`) leads when it stays inside `folder` once every symbolic
/// link is followed: the home's own confinement rules, for a folder that is not the home (the
/// source folder of `lurkbot import openclaw`). `None` when it escapes or is unusable.
pub fn confined_to(folder: &Path, raw: &str) -> Option<PathBuf> {
    let root = folder.canonicalize().ok()?;
    if raw.is_empty() {
        return Some(root);
    }
    HomePath::resolve(&root, raw).ok().map(|p| p.absolute)
}

/// `C:`, `c:foo` — any single ASCII letter followed by a colon at the start.
fn has_drive_letter(path: &str) -> bool {
    let b = path.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// Walks `segments` from `root`, resolving every symbolic link met on the way; `None` if a link
/// leads outside `root` or dangles (a write through it could land anywhere).
fn follow_inside(root: &Path, segments: &[&str]) -> Option<PathBuf> {
    let mut current = root.to_path_buf();
    let mut exists = true;
    for seg in segments {
        let next = current.join(seg);
        if exists {
            match std::fs::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = next.canonicalize().ok()?;
                    if !target.starts_with(root) {
                        return None;
                    }
                    current = target;
                    continue;
                }
                Ok(_) => {}
                Err(_) => exists = false,
            }
        }
        current = next;
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Result<(tempfile::TempDir, PathBuf), std::io::Error> {
        let dir = tempfile::tempdir()?;
        let canon = dir.path().canonicalize()?;
        Ok((dir, canon))
    }

    fn is_escape(r: Result<HomePath, PathError>) -> bool {
        matches!(r, Err(PathError::Escapes { .. }))
    }

    #[test]
    fn accepts_and_normalises_relative_paths() -> Result<(), Box<dyn std::error::Error>> {
        let (_d, root) = root()?;
        let p = HomePath::resolve(&root, "workspace\\a//./b.zip")?;
        assert_eq!(p.relative(), "workspace/a/b.zip");
        assert_eq!(p.absolute(), root.join("workspace/a/b.zip"));
        assert_eq!(HomePath::resolve(&root, ".")?.relative(), "");
        Ok(())
    }

    #[test]
    fn an_absolute_path_inside_the_home_is_refused_with_its_relative_form()
    -> Result<(), Box<dyn std::error::Error>> {
        let (_d, root) = root()?;
        let inside = format!("{}/workspace/a.zip", root.display());
        match HomePath::resolve(&root, &inside) {
            Err(e @ PathError::AbsoluteInside { .. }) => {
                assert!(e.to_string().contains("write 'workspace/a.zip'"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        let sneaky = format!("{}/../etc/passwd", root.display());
        assert!(is_escape(HomePath::resolve(&root, &sneaky)));
        assert!(is_escape(HomePath::resolve(
            &root,
            &root.display().to_string()
        )));
        Ok(())
    }

    #[test]
    fn refuses_escapes() -> Result<(), Box<dyn std::error::Error>> {
        let (_d, root) = root()?;
        for raw in [
            "../x",
            "a/../../x",
            "a/..",
            "/etc/passwd",
            "C:\\x",
            "c:x",
            "\\\\server\\share",
            "..\\x",
        ] {
            assert!(is_escape(HomePath::resolve(&root, raw)), "{raw}");
        }
        assert!(matches!(
            HomePath::resolve(&root, ""),
            Err(PathError::Invalid { .. })
        ));
        assert!(matches!(
            HomePath::resolve(&root, "a\0b"),
            Err(PathError::Invalid { .. })
        ));
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinks_leading_outside() -> Result<(), Box<dyn std::error::Error>> {
        let (_d, root) = root()?;
        let outside = tempfile::tempdir()?;
        std::os::unix::fs::symlink(outside.path(), root.join("out"))?;
        std::os::unix::fs::symlink(outside.path().join("nothing"), root.join("dangling"))?;
        std::fs::create_dir(root.join("real"))?;
        std::os::unix::fs::symlink(root.join("real"), root.join("inside"))?;
        assert!(is_escape(HomePath::resolve(&root, "out")));
        assert!(is_escape(HomePath::resolve(&root, "out/new/file.txt")));
        assert!(is_escape(HomePath::resolve(&root, "dangling")));
        let p = HomePath::resolve(&root, "inside/f.txt")?;
        assert_eq!(p.absolute(), root.join("real/f.txt"));
        assert_eq!(p.relative(), "inside/f.txt");
        Ok(())
    }
}
