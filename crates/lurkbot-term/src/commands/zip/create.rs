//! `zip create`: a zip archive of a file or folder, written to a temporary file and renamed.
//!
//! Names are stored as UTF-8 (flagged; bytes of non-UTF-8 file names become U+FFFD), with the
//! Unix permissions, the DOS time (local) and an extended timestamp (UTC seconds), which `unzip`
//! restores exactly.

use super::args::ZipCreateArgs;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;

use chrono::{Datelike, TimeZone, Timelike};
use zip::write::FullFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use super::reader;
use crate::archive::create::{CreateStats, WriteJob, create_archive};
use crate::archive::source::SourceItem;
use crate::archive::summary::CreateReport;
use crate::archive::work::secs_from_time;
use crate::blocking::cancelled;
use crate::{CommandCtx, CommandError, Outcome};

/// Extended timestamp extra field id ("UT").
const EXTENDED_TIMESTAMP: u16 = 0x5455;
const CHUNK: usize = 256 * 1024;

pub(super) async fn run(
    ctx: &CommandCtx<'_>,
    args: ZipCreateArgs,
) -> Result<Outcome, CommandError> {
    let level = args.level;
    let created = create_archive(ctx, &args.create, move |job| write_zip(job, level)).await?;
    Ok(CreateReport {
        command: "zip create",
        created,
        compression_level: Some(level),
        extra: Vec::new(),
    }
    .into_outcome())
}

fn write_zip(job: WriteJob<'_>, level: u32) -> Result<CreateStats, CommandError> {
    let WriteJob {
        file,
        items,
        shown,
        cancel,
        progress,
    } = job;
    let zerr = |e: zip::result::ZipError| match e {
        zip::result::ZipError::Io(io) => CommandError::io("write", shown, &io),
        other => reader::zip_error(shown, &other),
    };
    let mut zip = ZipWriter::new(BufWriter::with_capacity(CHUNK, file));
    let mut stats = CreateStats::default();
    let mut buf = vec![0u8; CHUNK];
    for item in items {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let name = item.display();
        let options = entry_options(item, level);
        if item.meta.is_dir() {
            zip.add_directory(format!("{name}/"), options)
                .map_err(zerr)?;
            stats.dirs += 1;
            continue;
        }
        let mut input = File::open(&item.path).map_err(|e| CommandError::io("read", &name, &e))?;
        zip.start_file(name.as_str(), options).map_err(zerr)?;
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(CommandError::io("read", &name, &e)),
            };
            zip.write_all(&buf[..n])
                .map_err(|e| CommandError::io("write", shown, &e))?;
            stats.bytes_in += n as u64;
            progress.advance(n as u64);
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
        }
        stats.files += 1;
    }
    let mut writer = zip.finish().map_err(zerr)?;
    writer
        .flush()
        .map_err(|e| CommandError::io("write", shown, &e))?;
    Ok(stats)
}

fn entry_options(item: &SourceItem, level: u32) -> FullFileOptions<'static, 'static> {
    let secs = item.meta.modified().map(secs_from_time).unwrap_or(0);
    let (method, level) = if level == 0 {
        (CompressionMethod::Stored, None)
    } else {
        (CompressionMethod::Deflated, Some(i64::from(level)))
    };
    let mut options = FullFileOptions::default()
        .compression_method(method)
        .compression_level(level)
        .last_modified_time(dos_time(secs))
        .unix_permissions(item.meta.permissions().mode() & 0o7777)
        .large_file(item.meta.len() >= u64::from(u32::MAX));
    if let Ok(secs) = u32::try_from(secs) {
        let mut field = vec![1u8];
        field.extend_from_slice(&secs.to_le_bytes());
        // Cannot fail: 5 bytes are far below the extra-field limit.
        let _ = options.add_extra_field(EXTENDED_TIMESTAMP, field, false);
    }
    options
}

/// The DOS date and time (local time, 2-second steps, 1980–2107) of `secs`.
fn dos_time(secs: i64) -> DateTime {
    chrono::Local
        .timestamp_opt(secs, 0)
        .single()
        .and_then(|t| {
            DateTime::from_date_and_time(
                u16::try_from(t.year()).ok()?,
                u8::try_from(t.month()).ok()?,
                u8::try_from(t.day()).ok()?,
                u8::try_from(t.hour()).ok()?,
                u8::try_from(t.minute()).ok()?,
                u8::try_from(t.second()).ok()?,
            )
            .ok()
        })
        .unwrap_or_default()
}
