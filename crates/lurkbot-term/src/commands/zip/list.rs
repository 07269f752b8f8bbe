//! `zip list`: the entries of an archive, from its central directory (nothing is decompressed).
//!
//! Streamed, in memory that does not grow with the archive: a first pass over the directory
//! counts the entries, sums their sizes, keeps the first `--max` and chooses the names'
//! encoding (`auto` picks one for the whole archive, so every name is seen first); with `--out`
//! a second pass writes every entry to the file as it is read.

use super::args::ZipListArgs;
use super::directory::{CentralDirectory, DirEntry};
use super::names::{NameChooser, RawName, decode_name};
use super::reader::{dos_fields, mtime_from};
use crate::archive::listing::{FullOut, ListEntry, Listing, write_full_listing};
use crate::archive::work::input_file;
use crate::blocking::run_blocking;
use crate::{CommandCtx, CommandError, Outcome, output};

pub(super) async fn run(ctx: &CommandCtx<'_>, args: ZipListArgs) -> Result<Outcome, CommandError> {
    let input = input_file(ctx, &args.list.input)?;
    let requested = args.encoding;
    let max = args.list.max;
    let target = match &args.list.out {
        Some(out) => Some(output::writable_target(ctx, out)?),
        None => None,
    };
    let cancel = ctx.cancel.clone();
    let archive = input.clone();
    let (first, totals, used, written) = run_blocking(move || {
        let shown = archive.relative();
        let cancelled = || cancel.is_cancelled();
        let mut directory = CentralDirectory::open(archive.absolute(), shown)?;
        let mut chooser = NameChooser::new(requested);
        // Names of the first entries stay raw until the encoding is chosen.
        let mut first: Vec<(RawName, ListEntry)> = Vec::with_capacity(max.min(1024));
        let (mut count, mut bytes) = (0usize, 0u64);
        directory.for_each(&cancelled, &mut |entry| {
            chooser.feed(&entry.raw);
            count += 1;
            bytes = bytes.saturating_add(entry.uncompressed_bytes);
            if first.len() < max {
                let listed = listed(&entry, String::new());
                first.push((entry.raw, listed));
            }
            Ok(())
        })?;
        let used = chooser.chosen();
        let first: Vec<ListEntry> = first
            .into_iter()
            .map(|(raw, mut listed)| {
                listed.name = decode_name(&raw, requested, used);
                listed
            })
            .collect();
        let extra = [("encoding", used.as_str().into())];
        let written = match &target {
            Some(target) => Some(write_full_listing(
                target,
                "zip list",
                &archive,
                &extra,
                count,
                &mut |each| {
                    directory.for_each(&cancelled, &mut |entry| {
                        let name = decode_name(&entry.raw, requested, used);
                        each(&listed(&entry, name))
                    })
                },
            )?),
            None => None,
        };
        Ok((first, (count, bytes), used, written))
    })
    .await?;
    Listing {
        command: "zip list",
        input: &input,
        entries: first,
        totals: Some(totals),
        extra: vec![("encoding", used.as_str().into())],
    }
    .into_outcome(ctx, written.map_or(FullOut::None, FullOut::Written), max)
}

/// An entry as a listing shows it, named `name`.
fn listed(entry: &DirEntry, name: String) -> ListEntry {
    let (date, time) = entry.dos_date_time;
    ListEntry {
        name,
        is_dir: entry.is_dir,
        compressed_bytes: Some(entry.compressed_bytes),
        uncompressed_bytes: entry.uncompressed_bytes,
        modified_time_ms: mtime_from(entry.unix_mtime, Some(dos_fields(date, time)))
            .map(|s| s.saturating_mul(1000)),
        tar: None,
    }
}
