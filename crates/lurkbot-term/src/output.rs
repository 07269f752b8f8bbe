//! Writing a command's product to a file inside the home (`--out`), as an artifact.
//!
//! Rules: the path must resolve inside the home and be free in the protection model (never a
//! secret or LurkBot's own state, decided on the resolved path). A new file is simply written. An existing file under `artifacts/` — a
//! previous product of a command — is replaced, so a listing can be refreshed. An existing
//! file anywhere else is user content: it is replaced only with `--overwrite --confirm`,
//! otherwise it is kept and the run answers `RefuseOverwrite` (or `ConfirmRequired` when
//! `--overwrite` came without `--confirm`). Writes are atomic.

use lurkbot_core::{HomePath, layout};
use serde_json::{Map, Value};

use crate::{Artifact, CommandCtx, CommandError, ErrorCode, ParsedArgs};

/// An output path and the switches that allow replacing an existing file there, read once
/// from the flags (`--out` or `--dest`-like, `--overwrite`, `--confirm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutFile {
    /// The home-relative path as given.
    pub path: String,
    /// `--overwrite` was given.
    pub overwrite: bool,
    /// `--confirm` was given.
    pub confirm: bool,
}

impl OutFile {
    /// The file named by `flag` (`--out`), with the replace switches; `None` when not given.
    pub fn from_args(parsed: &ParsedArgs, flag: &str) -> Option<Self> {
        parsed.get(flag).map(|path| Self {
            path: path.to_string(),
            overwrite: parsed.has("--overwrite"),
            confirm: parsed.has("--confirm"),
        })
    }

    /// Like [`OutFile::from_args`] for a flag the spec marks required (the parser has already
    /// refused its absence, so a miss here is a spec bug).
    ///
    /// # Errors
    /// `Internal` when the flag is missing.
    pub fn required(parsed: &ParsedArgs, flag: &str) -> Result<Self, CommandError> {
        Self::from_args(parsed, flag).ok_or_else(|| {
            CommandError::new(
                ErrorCode::Internal,
                format!("{flag} is required by the spec but missing"),
            )
        })
    }
}

/// Resolves a path a command will write to, applying the rules above.
///
/// # Errors
/// `PathEscapesAgentsRoot`, `InvalidArgs` (a directory), `PermissionDenied` (protected),
/// `RefuseOverwrite` or `ConfirmRequired`.
pub fn writable_target(ctx: &CommandCtx<'_>, out: &OutFile) -> Result<HomePath, CommandError> {
    checked_target(ctx, out, true)
}

/// Like [`writable_target`], but an existing file is kept unless `--overwrite --confirm` is
/// given even under `artifacts/`: for products the user asked for by name, such as archives.
///
/// # Errors
/// Those of [`writable_target`].
pub fn strict_target(ctx: &CommandCtx<'_>, out: &OutFile) -> Result<HomePath, CommandError> {
    checked_target(ctx, out, false)
}

fn checked_target(
    ctx: &CommandCtx<'_>,
    out: &OutFile,
    artifacts_replaceable: bool,
) -> Result<HomePath, CommandError> {
    let raw = out.path.as_str();
    let target = ctx.home.resolve_writable(raw)?;
    let resolved_rel = ctx.home.relative(target.absolute()).unwrap_or_default();
    if target.relative().is_empty() || target.absolute().is_dir() {
        return Err(CommandError::new(
            ErrorCode::InvalidArgs,
            format!("'{raw}' is a directory; give a file path such as artifacts/out.json"),
        ));
    }
    let exists = std::fs::symlink_metadata(target.absolute()).is_ok();
    let is_artifact =
        artifacts_replaceable && resolved_rel.starts_with(&format!("{}/", layout::ARTIFACTS));
    if exists && !is_artifact && !(out.overwrite && out.confirm) {
        if out.overwrite {
            return Err(CommandError::new(
                ErrorCode::ConfirmRequired,
                format!("replacing '{raw}' needs --confirm with --overwrite"),
            )
            .with_hint("add --confirm to replace it, or choose another path"));
        }
        return Err(CommandError::new(ErrorCode::RefuseOverwrite, format!("'{raw}' exists and was kept"))
            .with_hint(if artifacts_replaceable {
                "add --overwrite --confirm to replace it, or choose another path (files under artifacts/ are replaced freely)"
            } else {
                "add --overwrite --confirm to replace it, or choose another path"
            }));
    }
    Ok(target)
}

/// Writes `value` as pretty JSON to the `--out` path and returns the artifact.
///
/// # Errors
/// Those of [`writable_target`], and `IoError` when writing fails.
pub fn write_json_out(
    ctx: &CommandCtx<'_>,
    out: &OutFile,
    value: &serde_json::Value,
    description: &str,
) -> Result<Artifact, CommandError> {
    let target = writable_target(ctx, out)?;
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| CommandError::new(ErrorCode::Internal, format!("cannot encode JSON: {e}")))?;
    bytes.push(b'\n');
    lurkbot_core::write_atomic(target.absolute(), &bytes)
        .map_err(|e| CommandError::new(ErrorCode::IoError, e.to_string()))?;
    Ok(Artifact {
        path: target.relative().to_string(),
        mime: "application/json".into(),
        description: description.into(),
    })
}

/// Like [`write_json_out`] for any serialisable value, streamed to the file as it is
/// serialised (a listing of 100,000 entries is never held as one JSON tree or one buffer).
///
/// # Errors
/// Those of [`writable_target`], and `IoError` when writing fails.
pub fn write_serialized_out<T: serde::Serialize>(
    ctx: &CommandCtx<'_>,
    out: &OutFile,
    value: &T,
    description: &str,
) -> Result<Artifact, CommandError> {
    let target = writable_target(ctx, out)?;
    write_serialized_to(&target, value, description)
}

/// Writes `value` to a target already resolved by [`writable_target`] (for work done away from
/// the command's context, on a blocking thread), streamed as it is serialised.
///
/// # Errors
/// `IoError` when writing fails.
pub fn write_serialized_to<T: serde::Serialize>(
    target: &HomePath,
    value: &T,
    description: &str,
) -> Result<Artifact, CommandError> {
    lurkbot_core::write_atomic_streamed(target.absolute(), &mut |w| {
        serde_json::to_writer_pretty(&mut *w, value).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
    .map_err(|e| CommandError::new(ErrorCode::IoError, e.to_string()))?;
    Ok(Artifact {
        path: target.relative().to_string(),
        mime: "application/json".into(),
        description: description.into(),
    })
}

/// How a listing is cut for stdout and `result` (ARCHITECTURE.md §4.4): the first `emitted` of
/// `total`, the rest in the `--out` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capped {
    /// Everything there is.
    pub total: usize,
    /// How many stdout and `result` show.
    pub emitted: usize,
}

impl Capped {
    /// `total` items of which at most `max` are shown.
    pub fn new(total: usize, max: usize) -> Self {
        Self {
            total,
            emitted: total.min(max),
        }
    }

    /// Whether some were left out.
    pub fn truncated(&self) -> bool {
        self.emitted < self.total
    }

    /// Adds `count_total`, `count_emitted` and `truncated` to `result`.
    pub fn insert_into(&self, result: &mut Map<String, Value>) {
        result.insert("count_total".into(), self.total.into());
        result.insert("count_emitted".into(), self.emitted.into());
        result.insert("truncated".into(), self.truncated().into());
    }

    /// The stdout line saying how many `noun` were left out and how to see them (empty when
    /// nothing was).
    pub fn more_line(&self, noun: &str, max_flag: &str) -> String {
        if self.truncated() {
            format!(
                "… {} more {noun} not shown; use {max_flag} N or --out PATH for all\n",
                self.total - self.emitted
            )
        } else {
            String::new()
        }
    }
}
