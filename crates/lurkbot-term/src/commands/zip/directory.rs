//! A streaming reader of a zip archive's central directory, for `zip list`: entry records are
//! read one at a time into reused buffers, so listing 100,000 entries takes the memory of one
//! (the zip crate builds an index of every entry first, some 500 bytes each).
//!
//! It reads what a listing shows — names with their UTF-8 flag and Unicode Path field
//! (0x7075), sizes (zip64 field 0x0001), the modification time (extended timestamp 0x5455, else
//! the DOS time) — and finds the directory from the end record (zip64 when the archive needs
//! it). Data in front of the archive (a self-extractor's stub) is allowed: the directory is
//! looked for where the end record says and, failing that, right before the end record.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};

use super::names::RawName;
use crate::{CommandError, ErrorCode};

const END_SIGNATURE: u32 = 0x0605_4b50;
const END_LEN: usize = 22;
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;
const ZIP64_LOCATOR_LEN: u64 = 20;
const ZIP64_END_SIGNATURE: u32 = 0x0606_4b50;
const ZIP64_END_LEN: u64 = 56;
const ENTRY_SIGNATURE: u32 = 0x0201_4b50;
const ENTRY_LEN: usize = 46;
/// General purpose flag bit 11: the name is UTF-8.
const UTF8_FLAG: u16 = 1 << 11;

/// One entry as the central directory records it.
pub(super) struct DirEntry {
    /// The stored name.
    pub(super) raw: RawName,
    /// Bytes in the archive.
    pub(super) compressed_bytes: u64,
    /// Bytes once extracted.
    pub(super) uncompressed_bytes: u64,
    /// The extended timestamp's modification time (UTC), if the entry has one.
    pub(super) unix_mtime: Option<u32>,
    /// The DOS date and time (local time), as stored.
    pub(super) dos_date_time: (u16, u16),
    /// Whether the name ends with a slash.
    pub(super) is_dir: bool,
}

/// An archive's central directory, read front to back as often as needed.
pub(super) struct CentralDirectory {
    reader: BufReader<File>,
    start: u64,
    count: u64,
    shown: String,
}

impl CentralDirectory {
    /// Finds the central directory of `path` (shown as `shown`).
    ///
    /// # Errors
    /// `IoError` when the file cannot be read, `ZipError` when it holds no readable directory.
    pub(super) fn open(path: &std::path::Path, shown: &str) -> Result<Self, CommandError> {
        let file = File::open(path).map_err(|e| CommandError::io("open", shown, &e))?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let io = |e: std::io::Error| CommandError::io("read", shown, &e);
        let len = reader.seek(SeekFrom::End(0)).map_err(io)?;
        if len < END_LEN as u64 {
            return Err(invalid(shown, "it is too short to hold a zip directory"));
        }
        // The end record is the last 22 bytes plus a comment of at most 65,535.
        let tail_len = len.min(END_LEN as u64 + u64::from(u16::MAX));
        let tail_start = len - tail_len;
        let mut tail = vec![0u8; tail_len as usize];
        reader.seek(SeekFrom::Start(tail_start)).map_err(io)?;
        reader.read_exact(&mut tail).map_err(io)?;
        let end = (0..=tail.len() - END_LEN)
            .rev()
            .find(|&at| {
                u32_at(&tail, at) == END_SIGNATURE
                    && at + END_LEN + usize::from(u16_at(&tail, at + 20)) <= tail.len()
            })
            .ok_or_else(|| {
                invalid(
                    shown,
                    "no end of central directory record (not a zip archive, or truncated)",
                )
            })?;
        let end_at = tail_start + end as u64;
        let record = &tail[end..end + END_LEN];
        if u16_at(record, 4) != 0 || u16_at(record, 6) != 0 {
            return Err(CommandError::new(
                ErrorCode::ZipError,
                format!("'{shown}' uses an unsupported zip feature: split (multi-part) archives"),
            )
            .with_hint("join the parts into one archive first (zip -s 0 in.zip --out whole.zip)"));
        }
        let mut count = u64::from(u16_at(record, 10));
        let mut size = u64::from(u32_at(record, 12));
        let mut offset = u64::from(u32_at(record, 16));
        let mut directory_end = end_at;
        let locator = end
            .checked_sub(ZIP64_LOCATOR_LEN as usize)
            .filter(|&at| u32_at(&tail, at) == ZIP64_LOCATOR_SIGNATURE);
        let mut this = Self {
            reader,
            start: 0,
            count: 0,
            shown: shown.to_string(),
        };
        if let Some(at) = locator {
            let stated = u64_at(&tail, at + 8);
            let locator_at = tail_start + at as u64;
            let zip64_at = [stated, locator_at.saturating_sub(ZIP64_END_LEN)]
                .into_iter()
                .find(|&pos| {
                    pos < locator_at && this.signature_at(pos) == Some(ZIP64_END_SIGNATURE)
                })
                .ok_or_else(|| invalid(shown, "the zip64 end record is missing"))?;
            let mut zip64 = [0u8; ZIP64_END_LEN as usize];
            this.read_at(zip64_at, &mut zip64)?;
            count = u64_at(&zip64, 32);
            size = u64_at(&zip64, 40);
            offset = u64_at(&zip64, 48);
            directory_end = zip64_at;
        }
        let behind = directory_end
            .checked_sub(size)
            .ok_or_else(|| invalid(shown, "the central directory is larger than the file"))?;
        this.count = count;
        this.start = if count == 0 {
            behind
        } else {
            [offset, behind]
                .into_iter()
                .find(|&pos| this.signature_at(pos) == Some(ENTRY_SIGNATURE))
                .ok_or_else(|| {
                    invalid(
                        shown,
                        "the central directory is not where the end record says",
                    )
                })?
        };
        Ok(this)
    }

    /// Calls `each` for every entry in order; stops at the first error (`each`'s or a corrupt
    /// record). `cancelled` is asked before every entry.
    ///
    /// # Errors
    /// `ZipError` for a corrupt or truncated directory, what `each` returns.
    pub(super) fn for_each(
        &mut self,
        cancelled: &dyn Fn() -> bool,
        each: &mut dyn FnMut(DirEntry) -> Result<(), CommandError>,
    ) -> Result<(), CommandError> {
        let shown = self.shown.clone();
        let io = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                CommandError::new(ErrorCode::ZipError, format!("'{shown}' is truncated"))
                    .with_hint("the file ends early; download or copy it again")
            } else {
                CommandError::io("read", &shown, &e)
            }
        };
        self.reader.seek(SeekFrom::Start(self.start)).map_err(io)?;
        let mut fixed = [0u8; ENTRY_LEN];
        let mut extra = Vec::new();
        for _ in 0..self.count {
            if cancelled() {
                return Err(crate::blocking::cancelled());
            }
            self.reader.read_exact(&mut fixed).map_err(io)?;
            if u32_at(&fixed, 0) != ENTRY_SIGNATURE {
                return Err(invalid(&shown, "a central directory record is corrupt"));
            }
            let mut name = vec![0u8; usize::from(u16_at(&fixed, 28))];
            self.reader.read_exact(&mut name).map_err(io)?;
            extra.resize(usize::from(u16_at(&fixed, 30)), 0);
            self.reader.read_exact(&mut extra).map_err(io)?;
            let comment = i64::from(u16_at(&fixed, 32));
            self.reader.seek_relative(comment).map_err(io)?;
            each(entry(&fixed, name, &extra))?;
        }
        Ok(())
    }

    /// The four bytes at `pos` as a signature, if they can be read.
    fn signature_at(&mut self, pos: u64) -> Option<u32> {
        let mut bytes = [0u8; 4];
        self.read_at(pos, &mut bytes).ok()?;
        Some(u32::from_le_bytes(bytes))
    }

    fn read_at(&mut self, pos: u64, buf: &mut [u8]) -> Result<(), CommandError> {
        let shown = &self.shown;
        self.reader
            .seek(SeekFrom::Start(pos))
            .and_then(|_| self.reader.read_exact(buf))
            .map_err(|e| CommandError::io("read", shown, &e))
    }
}

/// One record's fields, its name and its extra fields made into an entry.
fn entry(fixed: &[u8; ENTRY_LEN], name: Vec<u8>, extra: &[u8]) -> DirEntry {
    let mut compressed = u64::from(u32_at(fixed, 20));
    let mut uncompressed = u64::from(u32_at(fixed, 24));
    let mut unix_mtime = None;
    let mut unicode_path = None;
    let mut rest = extra;
    while rest.len() >= 4 {
        let id = u16_at(rest, 0);
        let size = usize::from(u16_at(rest, 2)).min(rest.len() - 4);
        let data = &rest[4..4 + size];
        match id {
            // zip64: the 8-byte values of the fields whose 4-byte ones are all ones, in order.
            0x0001 => {
                let mut values = data.chunks_exact(8).map(|c| u64_at(c, 0));
                if uncompressed == u64::from(u32::MAX)
                    && let Some(v) = values.next()
                {
                    uncompressed = v;
                }
                if compressed == u64::from(u32::MAX)
                    && let Some(v) = values.next()
                {
                    compressed = v;
                }
            }
            // Extended timestamp: flags, then (in the central directory) the modification time.
            0x5455 if data.len() >= 5 => unix_mtime = Some(u32_at(data, 1)),
            // Info-ZIP Unicode Path: version, the CRC-32 of the stored name, the UTF-8 name.
            0x7075 if data.len() >= 5 && u32_at(data, 1) == crc32fast::hash(&name) => {
                unicode_path = String::from_utf8(data[5..].to_vec()).ok();
            }
            _ => {}
        }
        rest = &rest[4 + size..];
    }
    DirEntry {
        is_dir: matches!(name.last(), Some(b'/' | b'\\')),
        raw: RawName {
            utf8_flag: u16_at(fixed, 8) & UTF8_FLAG != 0,
            bytes: name,
            unicode_path,
        },
        compressed_bytes: compressed,
        uncompressed_bytes: uncompressed,
        unix_mtime,
        dos_date_time: (u16_at(fixed, 14), u16_at(fixed, 12)),
    }
}

fn invalid(shown: &str, what: &str) -> CommandError {
    CommandError::new(
        ErrorCode::ZipError,
        format!("'{shown}' is not a valid zip archive: {what}"),
    )
    .with_hint(
        "check that the file is a complete zip archive (not another format or a partial download)",
    )
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    bytes
        .get(at..at + 2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes.get(at..at + 8).map_or(0, |b| {
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    })
}
