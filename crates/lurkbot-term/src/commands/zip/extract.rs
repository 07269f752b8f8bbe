//! `zip extract`: staged, all-or-nothing extraction (see `archive::extractor`).

use super::args::ZipExtractArgs;
use super::names::decode_names;
use super::reader;
use crate::archive::extractor::{EntryMeta, ExtractOptions, Extractor, SkipReason};
use crate::archive::summary::extract_outcome;
use crate::archive::work::time_from_secs;
use crate::blocking::run_blocking;
use crate::{CommandCtx, CommandError, ErrorCode, Outcome};

pub(super) async fn run(
    ctx: &CommandCtx<'_>,
    args: ZipExtractArgs,
) -> Result<Outcome, CommandError> {
    let encoding = args.encoding;
    let (input, opts) = ExtractOptions::resolve(ctx, &args.extract, ErrorCode::ZipError)?;
    let dest = opts.dest.clone();
    let limits = opts.limits;
    let path = input.absolute().to_path_buf();
    let shown = input.relative().to_string();
    let (report, used) = run_blocking(move || {
        let mut archive = reader::open(&path, &shown)?;
        let count = archive.len() as u64;
        if count > limits.max_files {
            return Err(CommandError::new(
                ErrorCode::ArchiveTooLarge,
                format!(
                    "'{shown}' has {count} entries, more than --max-files {}; nothing was extracted",
                    limits.max_files
                ),
            )
            .with_hint("if you trust the archive, raise --max-files")
            .with_detail("max_files", limits.max_files)
            .with_detail("count_total", count));
        }
        let raw = reader::raw_names(&mut archive, &shown)?;
        let (names, used) = decode_names(&raw, encoding);
        let progress = opts.progress.clone();
        let declared: u64 = archive.decompressed_size().map_or(0, |n| u64::try_from(n).unwrap_or(u64::MAX));
        progress.begin(&format!("extracting {shown}"), Some(declared));
        let outcome = extract_all(&mut archive, &names, &shown, opts);
        progress.end();
        outcome.map(|report| (report, used))
    })
    .await?;
    Ok(extract_outcome(
        "zip extract",
        &input,
        &dest,
        report,
        vec![("encoding", used.as_str().into())],
    ))
}

fn extract_all(
    archive: &mut reader::Archive,
    names: &[String],
    shown: &str,
    opts: ExtractOptions,
) -> Result<crate::archive::extractor::ExtractReport, CommandError> {
    let mut extractor = Extractor::new(opts)?;
    for (i, name) in names.iter().enumerate() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| reader::zip_error(shown, &e))?;
        let meta = EntryMeta {
            mtime: reader::mtime_secs(&entry).map(time_from_secs),
            mode: entry.unix_mode().map(|m| m & 0o7777),
        };
        let special = entry
            .unix_mode()
            .map(|m| m & 0o170_000)
            .is_some_and(|kind| !matches!(kind, 0 | 0o100_000 | 0o040_000 | 0o120_000));
        if entry.is_symlink() {
            extractor.skip_entry(name, SkipReason::UnsafeLink)?;
        } else if special {
            // FIFOs, devices and sockets recorded by Info-ZIP: never created, never made into
            // regular files.
            extractor.skip_entry(name, SkipReason::Unsupported)?;
        } else if entry.is_dir() {
            extractor.dir(name, meta)?;
        } else {
            let declared = entry.size();
            extractor.file(name, declared, meta, &mut entry)?;
        }
    }
    extractor.commit()
}
