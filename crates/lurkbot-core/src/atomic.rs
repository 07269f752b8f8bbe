//! Atomic file writes: temp file in the same directory, fsync, rename, fsync of the directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::CoreError;

/// Writes `bytes` to `path` atomically with mode 0600 (on Unix): everything LurkBot creates in
/// the home is private (ARCHITECTURE.md §2).
///
/// A reader sees either the old content or the new, never a mix; a crash leaves the old file.
///
/// # Errors
/// Any I/O failure, with the path concerned. The temp file is removed on failure.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CoreError> {
    write_atomic_with_mode(path, bytes, 0o600)
}

/// Like [`write_atomic`] with an explicit Unix permission mode (ignored elsewhere), e.g. 0o600
/// for files that must not be readable by others.
///
/// # Errors
/// Any I/O failure, with the path concerned.
pub fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CoreError> {
    write_atomic_streamed_with_mode(path, mode, &mut |w| w.write_all(bytes))
}

/// Like [`write_atomic`], the content streamed by `fill` instead of held in memory (large
/// listings go to disk as they are serialised).
///
/// # Errors
/// Any I/O failure, `fill`'s included, with the path concerned; the temp file is removed.
pub fn write_atomic_streamed(
    path: &Path,
    fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), CoreError> {
    write_atomic_streamed_with_mode(path, 0o600, fill)
}

/// Writes what `fill` produces to a synced temp file beside `path` and renames it into place.
fn write_atomic_streamed_with_mode(
    path: &Path,
    mode: u32,
    fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), CoreError> {
    let (dir, tmp) = write_synced_temp_with(path, mode, true, fill)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CoreError::io("rename into place", path, e)
    })?;
    sync_dir(&dir);
    Ok(())
}

/// Like [`write_atomic`] without the final fsync of the directory: the content is synced
/// before the rename, so after a crash the file holds the new content or the previous one,
/// never a mix or nothing. For state that may fall back one write (counters kept for display)
/// and is rewritten often: it saves one fsync per write.
///
/// # Errors
/// Any I/O failure, with the path concerned. The temp file is removed on failure.
pub fn write_atomic_may_revert(path: &Path, bytes: &[u8]) -> Result<(), CoreError> {
    let (_, tmp) = write_synced_temp(path, bytes, 0o600)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CoreError::io("rename into place", path, e)
    })
}

/// Like [`write_atomic`] without any fsync, for files that describe only the running process
/// (the gateway's address and pid in `run/`): after a crash they are stale whatever they hold,
/// so durability buys nothing, and the two fsyncs (a millisecond or more) sat on the path to the
/// gateway's first answer. A reader still sees the old content or the new, never a mix.
///
/// # Errors
/// Any I/O failure, with the path concerned. The temp file is removed on failure.
pub fn write_atomic_volatile(path: &Path, bytes: &[u8]) -> Result<(), CoreError> {
    let (_, tmp) = write_synced_temp_with(path, 0o600, false, &mut |w| w.write_all(bytes))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CoreError::io("rename into place", path, e)
    })
}

/// Creates `path` with `bytes` only if it does not exist yet; returns `false` (and writes
/// nothing) when it does. The content is published atomically: written to a temp file, synced,
/// then hard-linked into place, so the file is never seen half-written and an existing file is
/// never replaced.
///
/// # Errors
/// Any I/O failure other than "already exists".
pub fn write_new_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<bool, CoreError> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let (dir, tmp) = write_synced_temp(path, bytes, mode)?;
    let result = match std::fs::hard_link(&tmp, path) {
        Ok(()) => {
            sync_dir(&dir);
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(CoreError::io("create", path, e)),
    };
    let _ = std::fs::remove_file(&tmp);
    result
}

/// Writes `bytes` to a fresh temp file beside `path` (mode `mode` on Unix) and syncs it.
/// Returns the directory and the temp path; on failure the temp file is removed.
fn write_synced_temp(
    path: &Path,
    bytes: &[u8],
    mode: u32,
) -> Result<(PathBuf, PathBuf), CoreError> {
    write_synced_temp_with(path, mode, true, &mut |w| w.write_all(bytes))
}

/// Like [`write_synced_temp`], the content coming from `fill` (written through a buffer).
fn write_synced_temp_with(
    path: &Path,
    mode: u32,
    sync: bool,
    fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(PathBuf, PathBuf), CoreError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| CoreError::io("create directory", &dir, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", crate::random_hex(4)));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    // The temporary copy is private (0600) while it is written, whatever the final mode: a
    // crash must not leave a readable copy of a secret behind (ARCHITECTURE.md §4.6).
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options
        .open(&tmp)
        .map_err(|e| CoreError::io("create", &tmp, e))
        .and_then(|file| {
            let mut buffered = std::io::BufWriter::with_capacity(64 * 1024, file);
            fill(&mut buffered).map_err(|e| CoreError::io("write", &tmp, e))?;
            let file = buffered
                .into_inner()
                .map_err(|e| CoreError::io("write", &tmp, e.into_error()))?;
            #[cfg(unix)]
            if mode & 0o777 != 0o600 {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
                    .map_err(|e| CoreError::io("set permissions of", &tmp, e))?;
            }
            #[cfg(not(unix))]
            let _ = mode;
            if sync {
                file.sync_all().map_err(|e| CoreError::io("sync", &tmp, e))
            } else {
                Ok(())
            }
        });
    match written {
        Ok(()) => Ok((dir, tmp)),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Makes a rename durable. Best effort: some filesystems refuse to sync directories.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_files() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let p = dir.path().join("sub/state.json");
        write_atomic(&p, b"one")?;
        write_atomic(&p, b"two")?;
        assert_eq!(std::fs::read(&p)?, b"two");
        write_atomic_may_revert(&p, b"three")?;
        assert_eq!(std::fs::read(&p)?, b"three");
        write_atomic_volatile(&p, b"four")?;
        assert_eq!(std::fs::read(&p)?, b"four");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&p)?.permissions().mode() & 0o777, 0o600);
        }
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn honours_mode() -> Result<(), Box<dyn std::error::Error>> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        let p = dir.path().join("config.toml");
        write_atomic_with_mode(&p, b"x", 0o600)?;
        assert_eq!(std::fs::metadata(&p)?.permissions().mode() & 0o777, 0o600);
        Ok(())
    }

    #[test]
    fn write_new_never_replaces() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let p = dir.path().join("AGENTS.md");
        assert!(write_new_atomic(&p, b"first", 0o644)?);
        assert!(!write_new_atomic(&p, b"second", 0o644)?);
        assert_eq!(std::fs::read(&p)?, b"first");
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
        Ok(())
    }

    #[test]
    fn failure_keeps_the_old_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        // A directory where the file should be: rename fails, nothing is lost.
        let p = dir.path().join("busy");
        std::fs::create_dir(&p)?;
        std::fs::write(p.join("keep"), b"k")?;
        assert!(write_atomic(&p, b"new").is_err());
        assert_eq!(std::fs::read(p.join("keep"))?, b"k");
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
        Ok(())
    }
}
