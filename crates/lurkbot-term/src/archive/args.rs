//! The typed flags of the `zip` and `tar` subcommands, built once from the parsed flags (the
//! second of ripgrep's two argument stages): each subcommand's `run` receives one of these and
//! never looks a flag up by name.

use super::work::Limits;
use crate::listing_flags::{DEFAULT_LIST_MAX, LIST_MAX_CEILING};
use crate::output::OutFile;
use crate::{CommandError, ParsedArgs};

/// `list`: the archive, how many entries to show, where the whole listing goes.
#[derive(Debug, Clone)]
pub(crate) struct ListArgs {
    /// `--in`, home-relative.
    pub(crate) input: String,
    /// `--max`.
    pub(crate) max: usize,
    /// `--out` with its replace switches.
    pub(crate) out: Option<OutFile>,
}

impl ListArgs {
    /// Reads the flags.
    ///
    /// # Errors
    /// `InvalidArgs` for a `--max` out of range.
    pub(crate) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let max = parsed.number("--max", DEFAULT_LIST_MAX, 0, LIST_MAX_CEILING)?;
        Ok(Self {
            input: parsed.get("--in").unwrap_or_default().to_string(),
            max: usize::try_from(max).unwrap_or(usize::MAX),
            out: OutFile::from_args(parsed, "--out"),
        })
    }
}

/// `extract`: the archive, the destination, the bomb limits and whether to replace files.
#[derive(Debug, Clone)]
pub(crate) struct ExtractArgs {
    /// `--in`, home-relative.
    pub(crate) input: String,
    /// `--dest`, home-relative.
    pub(crate) dest: String,
    /// `--max-files`, `--max-bytes`.
    pub(crate) limits: Limits,
    /// `--overwrite` together with `--confirm`.
    pub(crate) overwrite: bool,
}

impl ExtractArgs {
    /// Reads the flags: the limits, then `--confirm`.
    ///
    /// # Errors
    /// `InvalidArgs` for a bad limit, `ConfirmRequired` without `--confirm`.
    pub(crate) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let limits = Limits::from_args(parsed)?;
        parsed.require_confirm("extracting an archive")?;
        Ok(Self {
            input: parsed.get("--in").unwrap_or_default().to_string(),
            dest: parsed.get("--dest").unwrap_or_default().to_string(),
            limits,
            overwrite: parsed.overwrite_confirmed(),
        })
    }
}

/// `create`: what to archive and the archive file.
#[derive(Debug, Clone)]
pub(crate) struct CreateArgs {
    /// `--src`, home-relative.
    pub(crate) src: String,
    /// `--out` with its replace switches.
    pub(crate) out: OutFile,
}

impl CreateArgs {
    /// Reads the flags, `--confirm` first.
    ///
    /// # Errors
    /// `ConfirmRequired` without `--confirm`.
    pub(crate) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        parsed.require_confirm("creating an archive")?;
        Ok(Self {
            src: parsed.get("--src").unwrap_or_default().to_string(),
            out: OutFile::required(parsed, "--out")?,
        })
    }
}
