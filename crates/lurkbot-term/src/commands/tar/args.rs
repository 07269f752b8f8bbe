//! The typed flags of each `tar` subcommand, built once from the parsed flags.

use super::format::TarFormat;
use super::requested_format;
use crate::archive::args::{CreateArgs, ExtractArgs, ListArgs};
use crate::{CommandError, ErrorCode, ParsedArgs};

/// `tar list`.
#[derive(Debug, Clone)]
pub(super) struct TarListArgs {
    pub(super) list: ListArgs,
    /// `--format`; `None` detects the compression from the content.
    pub(super) format: Option<TarFormat>,
}

impl TarListArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let list = ListArgs::from_args(parsed)?;
        Ok(Self {
            list,
            format: requested_format(parsed.get("--format"))?,
        })
    }
}

/// `tar extract`.
#[derive(Debug, Clone)]
pub(super) struct TarExtractArgs {
    /// `--format`; `None` detects the compression from the content.
    pub(super) format: Option<TarFormat>,
    pub(super) extract: ExtractArgs,
}

impl TarExtractArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let format = requested_format(parsed.get("--format"))?;
        Ok(Self {
            format,
            extract: ExtractArgs::from_args(parsed)?,
        })
    }
}

/// `tar create`.
#[derive(Debug, Clone)]
pub(super) struct TarCreateArgs {
    /// The format written: `--format`, else the one `--out`'s name says.
    pub(super) format: TarFormat,
    /// The format `--out`'s name says, when it says one.
    pub(super) named: Option<TarFormat>,
    pub(super) create: CreateArgs,
}

impl TarCreateArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let out = parsed.get("--out").unwrap_or_default();
        let named = TarFormat::from_name(out);
        let format = match requested_format(parsed.get("--format"))? {
            Some(f) => f,
            None => named.ok_or_else(|| {
                CommandError::new(
                    ErrorCode::InvalidArgs,
                    format!("cannot tell the format from the name '{out}'"),
                )
                .with_hint(
                    "name it .tar, .tar.gz, .tgz, .tar.bz2, .tbz2, .tar.xz or .txz, or add --format",
                )
            })?,
        };
        Ok(Self {
            format,
            named,
            create: CreateArgs::from_args(parsed)?,
        })
    }
}
