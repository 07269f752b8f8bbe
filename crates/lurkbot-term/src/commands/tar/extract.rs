//! `tar extract`: staged, all-or-nothing extraction (see `archive::extractor`). Symbolic and
//! hard links are never created (`skipped.unsafe_link`), with or without `--no-symlinks`.

use super::args::TarExtractArgs;
use std::io::Read;

use super::format::open_reader;
use super::list::{is_metadata, kind};
use super::tar_error;
use crate::archive::extractor::{EntryMeta, ExtractOptions, ExtractReport, Extractor, SkipReason};
use crate::archive::summary::extract_outcome;
use crate::archive::work::time_from_secs;
use crate::blocking::run_blocking;
use crate::{CommandCtx, CommandError, ErrorCode, Outcome};

pub(super) async fn run(
    ctx: &CommandCtx<'_>,
    args: TarExtractArgs,
) -> Result<Outcome, CommandError> {
    let requested = args.format;
    let (input, opts) = ExtractOptions::resolve(ctx, &args.extract, ErrorCode::TarError)?;
    let dest = opts.dest.clone();
    let path = input.absolute().to_path_buf();
    let shown = input.relative().to_string();
    let compressed_size = std::fs::metadata(&path).map_or(0, |m| m.len());
    let (report, format) = run_blocking(move || {
        let (stream, format) = open_reader(&path, &shown, requested)?;
        let progress = opts.progress.clone();
        // The uncompressed size is unknown before reading; the bar counts bytes written.
        progress.begin(
            &format!("extracting {shown}"),
            (format == super::format::TarFormat::Tar).then_some(compressed_size),
        );
        let outcome = extract_all(stream, &shown, opts);
        progress.end();
        outcome.map(|report| (report, format))
    })
    .await?;
    Ok(extract_outcome(
        "tar extract",
        &input,
        &dest,
        report,
        vec![("format", format.as_str().into())],
    ))
}

fn extract_all(
    stream: Box<dyn Read + Send>,
    shown: &str,
    opts: ExtractOptions,
) -> Result<ExtractReport, CommandError> {
    let mut extractor = Extractor::new(opts)?;
    let mut archive = tar::Archive::new(stream);
    for entry in archive.entries().map_err(|e| tar_error(shown, &e))? {
        let mut entry = entry.map_err(|e| tar_error(shown, &e))?;
        let header = entry.header();
        let entry_type = header.entry_type();
        if is_metadata(entry_type) {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let meta = EntryMeta {
            mtime: header
                .mtime()
                .ok()
                .and_then(|s| i64::try_from(s).ok())
                .map(time_from_secs),
            mode: header.mode().ok().map(|m| m & 0o7777),
        };
        match kind(entry_type) {
            "file" => {
                let declared = entry.size();
                extractor.file(&name, declared, meta, &mut entry)?;
            }
            "dir" => extractor.dir(&name, meta)?,
            "symlink" | "hardlink" => extractor.skip_entry(&name, SkipReason::UnsafeLink)?,
            _ => extractor.skip_entry(&name, SkipReason::Unsupported)?,
        }
    }
    extractor.commit()
}
