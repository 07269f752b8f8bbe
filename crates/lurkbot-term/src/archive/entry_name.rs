//! Whether an archive entry's name may be written under `--dest` (ZipSlip / TarSlip defence).
//!
//! A name is refused when it contains NUL or another control character, starts with `/` (absolute), contains `:` (drive
//! letters such as `C:\x` and alternate data streams), or has a `..` segment. `\` counts as a
//! separator, as archives made on Windows use it. Empty and `.` segments are dropped, so
//! `./a//b` is `a/b`. What is left can only name a path below `--dest`; the extractor still
//! checks what exists on disk (symbolic links already in `--dest` are never followed).

/// Why an entry name is unsafe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnsafeName {
    /// The name contains a NUL character.
    Nul,
    /// The name contains another control character (ESC, CR, …): it would rewrite a terminal.
    Control,
    /// The name is absolute.
    Absolute,
    /// The name contains `:` (a drive letter or stream name).
    Colon,
    /// The name has a `..` segment.
    ParentDir,
    /// The name is empty once `.` and empty segments are dropped, for a file entry.
    Empty,
}

impl UnsafeName {
    /// A short explanation for listings of skipped entries.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Nul => "the name contains a NUL character",
            Self::Control => "the name contains control characters",
            Self::Absolute => "the name is an absolute path",
            Self::Colon => "the name contains ':' (drive letter)",
            Self::ParentDir => "the name has a '..' segment",
            Self::Empty => "the name is empty",
        }
    }
}

/// The segments of a safe entry name (possibly none, for a `./` directory entry).
///
/// # Errors
/// [`UnsafeName`] saying why the name may not be written.
pub(crate) fn safe_segments(name: &str) -> Result<Vec<String>, UnsafeName> {
    if name.contains('\0') {
        return Err(UnsafeName::Nul);
    }
    if name.chars().any(char::is_control) {
        return Err(UnsafeName::Control);
    }
    let normalized = name.replace('\\', "/");
    if normalized.starts_with('/') {
        return Err(UnsafeName::Absolute);
    }
    if normalized.contains(':') {
        return Err(UnsafeName::Colon);
    }
    let mut segments = Vec::new();
    for segment in normalized.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(UnsafeName::ParentDir),
            s => segments.push(s.to_string()),
        }
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names_are_normalised() {
        assert_eq!(safe_segments("a/b.txt").unwrap(), vec!["a", "b.txt"]);
        assert_eq!(safe_segments("./a//b/").unwrap(), vec!["a", "b"]);
        assert_eq!(safe_segments("dir\\file").unwrap(), vec!["dir", "file"]);
        assert_eq!(safe_segments("a..b/..c").unwrap(), vec!["a..b", "..c"]);
        assert!(safe_segments("./").unwrap().is_empty());
    }

    #[test]
    fn every_escape_is_refused() {
        for (name, why) in [
            ("../evil.txt", UnsafeName::ParentDir),
            ("a/../../b", UnsafeName::ParentDir),
            ("a/..", UnsafeName::ParentDir),
            ("..\\x", UnsafeName::ParentDir),
            ("/abs.txt", UnsafeName::Absolute),
            ("\\abs.txt", UnsafeName::Absolute),
            ("C:\\x", UnsafeName::Colon),
            ("c:x", UnsafeName::Colon),
            ("a/b:c", UnsafeName::Colon),
            ("a\0b", UnsafeName::Nul),
            ("evil\u{1b}]52;c;eA==\u{7}.txt", UnsafeName::Control),
            ("a\rb.txt", UnsafeName::Control),
            ("dir/\u{9b}x", UnsafeName::Control),
        ] {
            assert_eq!(safe_segments(name), Err(why), "{name:?}");
        }
    }
}
