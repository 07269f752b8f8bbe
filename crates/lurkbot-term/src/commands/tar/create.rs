//! `tar create`: a tar archive (optionally gzip/bzip2/xz-compressed) of a file or folder,
//! written to a temporary file and renamed. Entries are GNU-format headers with the files'
//! modes, owners and modification times; names keep their bytes.

use super::args::TarCreateArgs;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;

use super::format::{Compressor, TarFormat};
use crate::archive::create::{CreateStats, WriteJob, create_archive};
use crate::archive::summary::CreateReport;
use crate::blocking::cancelled;
use crate::{CancelFlag, CommandCtx, CommandError, Outcome, Progress};

const CHUNK: usize = 256 * 1024;
/// Read size for each file's content (below the allocator's mmap threshold, so the buffer is
/// reused from the heap file after file).
const FILE_CHUNK: usize = 64 * 1024;

pub(super) async fn run(
    ctx: &CommandCtx<'_>,
    args: TarCreateArgs,
) -> Result<Outcome, CommandError> {
    let format = args.format;
    let out_raw = args.create.out.path.as_str();
    let mut stderr = String::new();
    if let Some(named) = args.named.filter(|n| *n != format) {
        stderr.push_str(&format!(
            "warning: '{out_raw}' is named like {} but is written as {}\n",
            named.as_str(),
            format.as_str()
        ));
    }
    let created = create_archive(ctx, &args.create, move |job| write_tar(job, format)).await?;
    let mut outcome = CreateReport {
        command: "tar create",
        created,
        compression_level: format.level(),
        extra: vec![("format", format.as_str().into())],
    }
    .into_outcome();
    outcome.stderr = stderr;
    Ok(outcome)
}

/// Counts bytes read from a source file and checks for cancellation.
struct Counted<'a> {
    inner: File,
    progress: &'a Progress,
    cancel: &'a CancelFlag,
    bytes: u64,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        self.progress.advance(n as u64);
        Ok(n)
    }
}

/// A writer whose writes fail once the run is cancelled.
struct CancelWriter<'a, W> {
    inner: W,
    cancel: &'a CancelFlag,
}

impl<W: Write> Write for CancelWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        self.inner.flush()
    }
}

fn write_tar(job: WriteJob<'_>, format: TarFormat) -> Result<CreateStats, CommandError> {
    let WriteJob {
        file,
        items,
        shown,
        cancel,
        progress,
    } = job;
    let werr = |e: std::io::Error| {
        if cancel.is_cancelled() {
            cancelled()
        } else {
            CommandError::io("write", shown, &e)
        }
    };
    // The buffer sits outside the compressor so that copies into it read large chunks. Under the
    // compressor, writes fail once the run is cancelled, so an encoder that finishes its stream
    // when dropped (gzip) stops at the first write; bzip2's threads each end with their piece
    // and the rest is never written; xz is driven by `XzWriter`, which never finishes on drop
    // and checks the flag while it waits for its threads.
    let compressor = Compressor::new(
        format,
        CancelWriter {
            inner: file,
            cancel,
        },
        cancel,
    )
    .map_err(werr)?;
    let mut builder = tar::Builder::new(BufWriter::with_capacity(CHUNK, compressor));
    let mut stats = CreateStats::default();
    for item in items {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let mut header = tar::Header::new_gnu();
        header.set_metadata_in_mode(&item.meta, tar::HeaderMode::Complete);
        let name = std::path::Path::new(std::ffi::OsStr::from_bytes(&item.name));
        if item.meta.is_dir() {
            header.set_size(0);
            builder
                .append_data(&mut header, name, std::io::empty())
                .map_err(werr)?;
            stats.dirs += 1;
            continue;
        }
        let input =
            File::open(&item.path).map_err(|e| CommandError::io("read", &item.display(), &e))?;
        // The size is taken before reading: at most that many bytes are stored.
        header.set_size(item.meta.len());
        let mut counted = Counted {
            inner: input,
            progress,
            cancel,
            bytes: 0,
        };
        // The tar crate copies through 8 KiB reads; a buffer in between reads the file in
        // 64 KiB chunks (a 100 KB file: 2 read calls instead of 13).
        let data = BufReader::with_capacity(FILE_CHUNK, (&mut counted).take(item.meta.len()));
        builder.append_data(&mut header, name, data).map_err(werr)?;
        stats.bytes_in += counted.bytes;
        stats.files += 1;
    }
    // Every byte is read; a compressor may still hold the last blocks (xz: one per thread).
    progress.relabel(&format!("compressing the rest of {shown}"));
    let buffered = builder.into_inner().map_err(werr)?;
    let compressor = buffered.into_inner().map_err(|e| werr(e.into_error()))?;
    compressor.finish().map_err(werr)?.flush().map_err(werr)?;
    Ok(stats)
}
