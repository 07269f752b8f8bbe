//! The typed flags of each `zip` subcommand, built once from the parsed flags.

use super::names::NameEncoding;
use crate::archive::args::{CreateArgs, ExtractArgs, ListArgs};
use crate::{CommandError, ParsedArgs};

/// `zip list`.
#[derive(Debug, Clone)]
pub(super) struct ZipListArgs {
    pub(super) list: ListArgs,
    /// `--encoding` of entry names.
    pub(super) encoding: NameEncoding,
}

impl ZipListArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let list = ListArgs::from_args(parsed)?;
        Ok(Self {
            list,
            encoding: NameEncoding::parse(parsed.get("--encoding"))?,
        })
    }
}

/// `zip extract`.
#[derive(Debug, Clone)]
pub(super) struct ZipExtractArgs {
    /// `--encoding` of entry names.
    pub(super) encoding: NameEncoding,
    pub(super) extract: ExtractArgs,
}

impl ZipExtractArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let encoding = NameEncoding::parse(parsed.get("--encoding"))?;
        Ok(Self {
            encoding,
            extract: ExtractArgs::from_args(parsed)?,
        })
    }
}

/// `zip create`.
#[derive(Debug, Clone)]
pub(super) struct ZipCreateArgs {
    /// `--level`, 0–9.
    pub(super) level: u32,
    pub(super) create: CreateArgs,
}

impl ZipCreateArgs {
    pub(super) fn from_args(parsed: &ParsedArgs) -> Result<Self, CommandError> {
        let level = u32::try_from(parsed.number("--level", 6, 0, 9)?).unwrap_or(6);
        Ok(Self {
            level,
            create: CreateArgs::from_args(parsed)?,
        })
    }
}
