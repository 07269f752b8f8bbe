//! The gateway's log file, `logs/gateway.log`: JSON lines appended by one writer, rotated by
//! size (`gateway.log` → `gateway.log.1` → … → `gateway.log.<keep>`, the oldest dropped), mode
//! 0600 in a 0700 folder. [`tail`] reads a bounded window of it — the `logs.tail` method and
//! `lurkbot logs` share it.

use std::fs::File;
#[cfg(test)]
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::CoreError;

/// The log file inside the home.
pub const GATEWAY_LOG: &str = "logs/gateway.log";

/// An append-only file that starts a new file when the current one would pass `max_bytes`.
#[derive(Debug)]
pub struct RotatingLog {
    path: PathBuf,
    file: File,
    written: u64,
    max_bytes: u64,
    keep: usize,
}

impl RotatingLog {
    /// Opens (or creates) `path` for appending; its folder is created 0700 if missing.
    ///
    /// # Errors
    /// The folder or the file cannot be created.
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> Result<Self, CoreError> {
        if let Some(dir) = path.parent() {
            crate::create_private_dir(dir)?;
        }
        let file = crate::open_private_append(path).map_err(|e| CoreError::io("open", path, e))?;
        let written = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Self {
            path: path.to_path_buf(),
            file,
            written,
            max_bytes: max_bytes.max(1024),
            keep,
        })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves every kept file one number up and starts an empty current file.
    fn rotate(&mut self) -> std::io::Result<()> {
        let numbered = |n: usize| PathBuf::from(format!("{}.{n}", self.path.display()));
        if self.keep == 0 {
            let _ = std::fs::remove_file(&self.path);
        } else {
            let _ = std::fs::remove_file(numbered(self.keep));
            for n in (1..self.keep).rev() {
                let from = numbered(n);
                if from.exists() {
                    std::fs::rename(&from, numbered(n + 1))?;
                }
            }
            std::fs::rename(&self.path, numbered(1))?;
        }
        self.file = crate::open_private_append(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for RotatingLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written > 0 && self.written + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Lines returned when the caller names no limit.
pub const DEFAULT_TAIL_LINES: usize = 500;
/// Bytes read when the caller names no limit.
pub const DEFAULT_TAIL_BYTES: u64 = 250_000;

/// A window of the log: whole lines and where the next read starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TailWindow {
    /// The byte offset after the last line returned: pass it back as the next cursor.
    pub cursor: u64,
    /// The file's size when read.
    pub size: u64,
    /// Whole lines, oldest first, without their newline.
    pub lines: Vec<String>,
    /// Older lines were left out to keep within the limits.
    pub truncated: bool,
    /// The cursor lay beyond the end (the file was rotated): the window is the file's tail.
    pub reset: bool,
}

/// Reads the lines after `cursor` (or, without one, the file's last lines): at most `limit`
/// lines and `max_bytes` bytes, the newest kept. A missing file is an empty window. A partial
/// line at the end (a write in progress) is left for the next read.
///
/// # Errors
/// The file exists but cannot be read.
pub fn tail(
    path: &Path,
    cursor: Option<u64>,
    limit: usize,
    max_bytes: u64,
) -> Result<TailWindow, CoreError> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TailWindow::default()),
        Err(e) => return Err(CoreError::io("open", path, e)),
    };
    let size = file
        .metadata()
        .map_err(|e| CoreError::io("read", path, e))?
        .len();
    let max_bytes = max_bytes.max(1);
    let reset = cursor.is_some_and(|c| c > size);
    let wanted_start = match cursor {
        Some(c) if c <= size => c,
        _ => 0,
    };
    let from_tail = cursor.is_none() || reset;
    let start = if from_tail || size - wanted_start > max_bytes {
        size.saturating_sub(max_bytes).max(wanted_start)
    } else {
        wanted_start
    };
    let mut truncated = start > wanted_start;
    file.seek(SeekFrom::Start(start))
        .map_err(|e| CoreError::io("read", path, e))?;
    let mut bytes = Vec::new();
    file.take(size - start)
        .read_to_end(&mut bytes)
        .map_err(|e| CoreError::io("read", path, e))?;
    // Begin at a line start: drop the partial first line of a window cut mid-file.
    let mut begin = 0;
    if start > 0 && truncated {
        match bytes.iter().position(|b| *b == b'\n') {
            Some(n) => begin = n + 1,
            None => begin = bytes.len(),
        }
    }
    // End after the last newline: a partial last line is read next time.
    let end = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(begin, |n| (n + 1).max(begin));
    let mut lines: Vec<String> = bytes[begin..end]
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    if lines.len() > limit {
        lines.drain(..lines.len() - limit);
        truncated = true;
    }
    Ok(TailWindow {
        cursor: start + end as u64,
        size,
        lines,
        truncated,
        reset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_lines(log: &mut RotatingLog, n: usize) {
        for i in 0..n {
            writeln!(log, "{{\"n\":{i}}}").unwrap();
        }
    }

    #[test]
    fn rotates_by_size_and_keeps_the_newest_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/gateway.log");
        let mut log = RotatingLog::open(&path, 1024, 2).unwrap();
        write_lines(&mut log, 400);
        for file in [path.clone(), dir.path().join("logs/gateway.log.1")] {
            let len = std::fs::metadata(&file).unwrap().len();
            assert!(len > 0 && len <= 1024, "{} has {len} bytes", file.display());
        }
        assert!(dir.path().join("logs/gateway.log.2").exists());
        assert!(!dir.path().join("logs/gateway.log.3").exists());
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(last.ends_with("{\"n\":399}\n"), "{last}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&dir.path().join("logs")), 0o700);
        }
    }

    #[test]
    fn tail_reads_whole_lines_and_follows_a_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.log");
        assert_eq!(tail(&path, None, 10, 1000).unwrap(), TailWindow::default());
        std::fs::write(&path, "a\nb\nc\npartial").unwrap();
        let first = tail(&path, None, 2, 1000).unwrap();
        assert_eq!(first.lines, ["b", "c"]);
        assert!(first.truncated);
        assert_eq!(first.cursor, 6);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b" line\nd\n").unwrap();
        let next = tail(&path, Some(first.cursor), 10, 1000).unwrap();
        assert_eq!(next.lines, ["partial line", "d"]);
        assert!(!next.truncated && !next.reset);
        let again = tail(&path, Some(next.cursor), 10, 1000).unwrap();
        assert!(again.lines.is_empty());
        std::fs::write(&path, "new\n").unwrap();
        let rotated = tail(&path, Some(next.cursor), 10, 1000).unwrap();
        assert!(rotated.reset);
        assert_eq!(rotated.lines, ["new"]);
    }

    #[test]
    fn tail_keeps_within_max_bytes_from_a_line_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.log");
        std::fs::write(&path, "first line\nsecond\nthird\n").unwrap();
        let window = tail(&path, None, 100, 10).unwrap();
        assert_eq!(window.lines, ["third"]);
        assert!(window.truncated);
        let behind = tail(&path, Some(0), 100, 10).unwrap();
        assert_eq!(behind.lines, ["third"]);
        assert!(behind.truncated);
    }
}
