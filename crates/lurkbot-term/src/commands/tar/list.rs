//! `tar list`: reads the whole (decompressed) stream, entry headers only.

use super::args::TarListArgs;
use tar::EntryType;

use super::format::open_reader;
use super::tar_error;
use crate::archive::listing::{FullOut, ListEntry, Listing, TarFields};
use crate::archive::work::input_file;
use crate::blocking::{cancelled, run_blocking};
use crate::{CommandCtx, CommandError, Outcome};

pub(super) async fn run(ctx: &CommandCtx<'_>, args: TarListArgs) -> Result<Outcome, CommandError> {
    let requested = args.format;
    let input = input_file(ctx, &args.list.input)?;
    let path = input.absolute().to_path_buf();
    let shown = input.relative().to_string();
    let cancel = ctx.cancel.clone();
    let (entries, format) = run_blocking(move || {
        let (stream, format) = open_reader(&path, &shown, requested)?;
        let mut archive = tar::Archive::new(stream);
        let mut entries = Vec::new();
        for entry in archive.entries().map_err(|e| tar_error(&shown, &e))? {
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            let entry = entry.map_err(|e| tar_error(&shown, &e))?;
            let header = entry.header();
            let entry_type = header.entry_type();
            if is_metadata(entry_type) {
                continue;
            }
            entries.push(ListEntry {
                name: String::from_utf8_lossy(&entry.path_bytes()).into_owned(),
                compressed_bytes: None,
                uncompressed_bytes: entry.size(),
                is_dir: entry_type.is_dir(),
                modified_time_ms: header
                    .mtime()
                    .ok()
                    .and_then(|s| i64::try_from(s).ok())
                    .map(|s| s.saturating_mul(1000)),
                tar: Some(TarFields {
                    kind: kind(entry_type),
                    mode: header.mode().unwrap_or(0) & 0o7777,
                    uid: header.uid().unwrap_or(0),
                    gid: header.gid().unwrap_or(0),
                    link_name: entry
                        .link_name_bytes()
                        .map(|l| String::from_utf8_lossy(&l).into_owned()),
                }),
            });
        }
        Ok((entries, format))
    })
    .await?;
    Listing {
        command: "tar list",
        input: &input,
        entries,
        totals: None,
        extra: vec![("format", format.as_str().into())],
    }
    .into_outcome(
        ctx,
        args.list
            .out
            .as_ref()
            .map_or(FullOut::None, FullOut::FromEntries),
        args.list.max,
    )
}

/// Header-only entries (PAX and GNU extensions) that describe the next entry or the archive.
pub(super) fn is_metadata(entry_type: EntryType) -> bool {
    matches!(
        entry_type,
        EntryType::XGlobalHeader
            | EntryType::XHeader
            | EntryType::GNULongName
            | EntryType::GNULongLink
    )
}

/// The entry kind shown in listings.
pub(super) fn kind(entry_type: EntryType) -> &'static str {
    match entry_type {
        EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => "file",
        EntryType::Directory => "dir",
        EntryType::Symlink => "symlink",
        EntryType::Link => "hardlink",
        EntryType::Char => "char",
        EntryType::Block => "block",
        EntryType::Fifo => "fifo",
        _ => "other",
    }
}
