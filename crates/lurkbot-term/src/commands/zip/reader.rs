//! Opening zip archives and reading entry metadata (names, times), with corrupt input mapped
//! to `ZipError`.

use std::fs::File;
use std::io::{BufReader, Read, Seek};

use chrono::TimeZone;
use zip::ZipArchive;
use zip::extra_fields::ExtraField;
use zip::read::ZipFile;
use zip::result::ZipError as ZipCrateError;

use super::names::RawName;

use crate::{CommandError, ErrorCode};

/// General purpose flag bit 11: the name is UTF-8.
const UTF8_FLAG: u16 = 1 << 11;

/// An open archive.
pub(super) type Archive = ZipArchive<BufReader<File>>;

/// Opens `path` (shown as `shown`) as a zip archive.
///
/// # Errors
/// `IoError` when the file cannot be opened, `ZipError` when it is not a readable zip.
pub(super) fn open(path: &std::path::Path, shown: &str) -> Result<Archive, CommandError> {
    let file = File::open(path).map_err(|e| CommandError::io("open", shown, &e))?;
    ZipArchive::new(BufReader::with_capacity(64 * 1024, file)).map_err(|e| zip_error(shown, &e))
}

/// A `ZipError` for a failure of the zip reader or writer.
pub(super) fn zip_error(shown: &str, e: &ZipCrateError) -> CommandError {
    let (message, hint) = match e {
        ZipCrateError::UnsupportedArchive(what) if what.contains("assword") => (
            format!("'{shown}' is encrypted"),
            "encrypted zip archives are not supported; decrypt it with another tool first",
        ),
        ZipCrateError::UnsupportedArchive(what) => (
            format!("'{shown}' uses an unsupported zip feature: {what}"),
            "supported: stored, deflate, bzip2 and xz entries, zip64",
        ),
        ZipCrateError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => (
            format!("'{shown}' is truncated"),
            "the file ends early; download or copy it again",
        ),
        other => (
            format!(
                "'{shown}' is not a valid zip archive: {}",
                without_type_names(&other.to_string())
            ),
            "check that the file is a complete zip archive (not another format or a partial download)",
        ),
    };
    CommandError::new(ErrorCode::ZipError, message).with_hint(hint)
}

/// `text` with Rust paths (`zip::format::blocks::Block`) left out: they mean nothing to a user.
pub(super) fn without_type_names(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').filter(|w| !w.contains("::")).collect();
    let joined = words.join(" ");
    if joined.trim().is_empty() {
        "its structure could not be read".into()
    } else {
        joined
    }
}

/// The stored names of every entry, with their UTF-8 flag and Unicode Path field.
///
/// # Errors
/// `ZipError` for an unreadable entry header.
pub(super) fn raw_names(archive: &mut Archive, shown: &str) -> Result<Vec<RawName>, CommandError> {
    (0..archive.len())
        .map(|i| {
            let entry = archive.by_index_raw(i).map_err(|e| zip_error(shown, &e))?;
            Ok(raw_name(&entry))
        })
        .collect()
}

/// One entry's stored name, UTF-8 flag and valid Unicode Path field.
pub(super) fn raw_name<R: Read + Seek>(entry: &ZipFile<'_, R>) -> RawName {
    let bytes = entry.name_raw().to_vec();
    let unicode_path = entry.extra_data_fields().find_map(|f| match f {
        ExtraField::UnicodePath(u) => u
            .clone()
            .unwrap_valid(&bytes)
            .ok()
            .and_then(|c| String::from_utf8(c.into_vec()).ok()),
        _ => None,
    });
    RawName {
        utf8_flag: entry.flags().as_u16() & UTF8_FLAG != 0,
        bytes,
        unicode_path,
    }
}

/// The modification time in seconds since the epoch: the extended timestamp field (UTC) when
/// present, else the DOS date and time, read as local time.
pub(super) fn mtime_secs<R: Read + Seek>(entry: &ZipFile<'_, R>) -> Option<i64> {
    let extended = entry.extra_data_fields().find_map(|f| match f {
        ExtraField::ExtendedTimestamp(ts) => ts.mod_time(),
        _ => None,
    });
    let dos = entry.last_modified().map(|d| {
        (
            u32::from(d.year()),
            u32::from(d.month()),
            u32::from(d.day()),
            u32::from(d.hour()),
            u32::from(d.minute()),
            u32::from(d.second()),
        )
    });
    mtime_from(extended, dos)
}

/// The modification time in seconds since the epoch from an entry's extended timestamp (UTC),
/// else its DOS date and time (year, month, day, hour, minute, second; local time).
pub(super) fn mtime_from(
    extended: Option<u32>,
    dos: Option<(u32, u32, u32, u32, u32, u32)>,
) -> Option<i64> {
    if let Some(secs) = extended {
        return Some(i64::from(secs));
    }
    let (year, month, day, hour, minute, second) = dos?;
    let naive = chrono::NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?
        .and_hms_opt(hour, minute, second)?;
    chrono::Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|t| t.timestamp())
}

/// A DOS date and time as stored (`date`, `time`) split into its fields, for [`mtime_from`].
pub(super) fn dos_fields(date: u16, time: u16) -> (u32, u32, u32, u32, u32, u32) {
    let (date, time) = (u32::from(date), u32::from(time));
    (
        1980 + (date >> 9),
        (date >> 5) & 0xF,
        date & 0x1F,
        time >> 11,
        (time >> 5) & 0x3F,
        // 60 (a leap second) is stored by some writers; the zip crate reads it as 58.
        match (time & 0x1F) * 2 {
            60 => 58,
            second => second,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_left_out() {
        assert_eq!(
            without_type_names("failed to read zip::format::blocks::ZipLocalEntryBlock magic"),
            "failed to read magic"
        );
        assert_eq!(
            without_type_names("a::b"),
            "its structure could not be read"
        );
        assert_eq!(
            without_type_names("bad central directory"),
            "bad central directory"
        );
    }
}
