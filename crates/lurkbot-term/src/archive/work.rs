//! Pieces `zip` and `tar` share: the extraction limits, resolving `--in` and `--dest`, and
//! time and size conversions.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lurkbot_core::HomePath;

use crate::{CommandCtx, CommandError, ErrorCode, ParsedArgs};

/// Default `--max-files`.
pub(crate) const DEFAULT_MAX_FILES: u64 = 2000;
/// Default `--max-bytes` (512 MiB).
pub(crate) const DEFAULT_MAX_BYTES: u64 = 512 * 1024 * 1024;

/// Bomb limits of an extraction, enforced on what is actually written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most entries (files, directories and links, skipped ones included) to process.
    pub(crate) max_files: u64,
    /// Most bytes to write.
    pub(crate) max_bytes: u64,
}

impl Limits {
    /// `--max-files` and `--max-bytes`, or their defaults.
    ///
    /// # Errors
    /// `InvalidArgs` for a value that is not a positive whole number.
    pub(crate) fn from_args(args: &ParsedArgs) -> Result<Self, CommandError> {
        Ok(Self {
            max_files: args.number("--max-files", DEFAULT_MAX_FILES, 1, u64::MAX)?,
            max_bytes: args.number("--max-bytes", DEFAULT_MAX_BYTES, 1, u64::MAX)?,
        })
    }
}

/// Resolves `--in`: it must be an existing file inside the home that is not a secret.
///
/// # Errors
/// `PathEscapesAgentsRoot`, `PermissionDenied` for a secret, or `NotFound` / `InvalidArgs` for
/// a missing file or a directory.
pub(crate) fn input_file(ctx: &CommandCtx<'_>, raw: &str) -> Result<HomePath, CommandError> {
    let path = ctx.home.resolve(raw)?;
    let protection = ctx.home.protection_for(path.absolute(), ctx.session);
    if !protection.readable() {
        return Err(lurkbot_core::AccessError::Protected {
            path: raw.to_string(),
            action: "read",
            reason: protection.reason().unwrap_or("it is protected"),
        }
        .into());
    }
    match std::fs::metadata(path.absolute()) {
        Ok(meta) if meta.is_file() => Ok(path),
        Ok(_) => Err(CommandError::new(
            ErrorCode::InvalidArgs,
            format!("--in '{raw}' is not a file"),
        )),
        Err(_) => Err(
            CommandError::new(ErrorCode::NotFound, format!("no file at '{raw}'"))
                .with_hint("paths are relative to the LurkBot home; check the name"),
        ),
    }
}

/// Resolves `--dest`: a folder inside the home (created later if missing) that is not protected.
///
/// # Errors
/// `PathEscapesAgentsRoot`, `PermissionDenied` for a protected place, `InvalidArgs` for a file.
pub(crate) fn dest_dir(ctx: &CommandCtx<'_>, raw: &str) -> Result<HomePath, CommandError> {
    let dest = ctx.home.resolve_writable(raw)?;
    if dest.absolute().exists() && !dest.absolute().is_dir() {
        return Err(CommandError::new(
            ErrorCode::InvalidArgs,
            format!("--dest '{raw}' exists and is not a folder"),
        ));
    }
    Ok(dest)
}

/// A modification time in seconds since the epoch (negative before 1970).
pub(crate) fn time_from_secs(secs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

/// Seconds since the epoch of a time (negative before 1970).
pub(crate) fn secs_from_time(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// `1.5 MiB`-style sizes for summaries.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.0 MiB");
        for secs in [-86_400, 0, 1_700_000_000] {
            assert_eq!(secs_from_time(time_from_secs(secs)), secs);
        }
    }
}
