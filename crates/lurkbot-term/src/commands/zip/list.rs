//! `zip list`: the entries of an archive, from its central directory (nothing is decompressed).

use super::args::ZipListArgs;
use super::names::decode_names;
use super::reader;
use crate::archive::listing::{ListEntry, Listing};
use crate::archive::work::input_file;
use crate::blocking::run_blocking;
use crate::{CommandCtx, CommandError, Outcome};

pub(super) async fn run(ctx: &CommandCtx<'_>, args: ZipListArgs) -> Result<Outcome, CommandError> {
    let input = input_file(ctx, &args.list.input)?;
    let encoding = args.encoding;
    let path = input.absolute().to_path_buf();
    let shown = input.relative().to_string();
    let cancel = ctx.cancel.clone();
    let (entries, used) = run_blocking(move || {
        let mut archive = reader::open(&path, &shown)?;
        // One pass over the headers: names are decoded together afterwards, since `auto`
        // chooses one encoding for the whole archive.
        let mut raw = Vec::with_capacity(archive.len());
        let mut entries = Vec::with_capacity(archive.len());
        for i in 0..archive.len() {
            if cancel.is_cancelled() {
                return Err(crate::blocking::cancelled());
            }
            let entry = archive
                .by_index_raw(i)
                .map_err(|e| reader::zip_error(&shown, &e))?;
            raw.push(reader::raw_name(&entry));
            entries.push(ListEntry {
                is_dir: entry.is_dir(),
                compressed_bytes: Some(entry.compressed_size()),
                uncompressed_bytes: entry.size(),
                modified_time_ms: reader::mtime_secs(&entry).map(|s| s.saturating_mul(1000)),
                name: String::new(),
                tar: None,
            });
        }
        let (names, used) = decode_names(&raw, encoding);
        for (entry, name) in entries.iter_mut().zip(names) {
            entry.name = name;
        }
        Ok((entries, used))
    })
    .await?;
    Listing {
        command: "zip list",
        input: &input,
        entries,
        extra: vec![("encoding", used.as_str().into())],
    }
    .into_outcome(ctx, args.list.out.as_ref(), args.list.max)
}
