//! Private folders and append-only files: a folder created 0700, a file opened for appending
//! 0600, and one line appended to such a file (the JSONL logs of the gateway, IRC and cron);
//! and the process's file creation mask, so that everything else LurkBot creates in the home
//! (transcripts, memory files, the memory index, artifacts) is private too.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::CoreError;

/// Makes every file and folder this process creates from now on private to its user (umask
/// 077: files 0600, folders 0700), whatever mode the code creating them asks for. Called first
/// by the `lurkbot` binary and by the gateway.
pub fn make_created_files_private() {
    #[cfg(unix)]
    {
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    }
}

/// Creates `dir` and its parents; the last component gets mode 0700 on Unix.
///
/// # Errors
/// The folder cannot be created.
pub fn create_private_dir(dir: &Path) -> Result<(), CoreError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| CoreError::io("create directory", dir, e))
}

/// Opens `path` for appending, creating it with mode 0600 on Unix.
///
/// # Errors
/// The file cannot be opened.
pub fn open_private_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Appends `line` and a newline to `path` in one write (its folder made private if missing).
///
/// # Errors
/// The folder or the file cannot be written.
pub fn append_private_line(path: &Path, line: &str) -> Result<(), CoreError> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    open_private_append(path)
        .and_then(|mut f| f.write_all(&bytes))
        .map_err(|e| CoreError::io("append to", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_privately() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/log.jsonl");
        append_private_line(&path, "one").unwrap();
        append_private_line(&path, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&dir.path().join("a/b")), 0o700);
        }
    }
}
