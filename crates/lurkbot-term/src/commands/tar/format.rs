//! Tar formats: plain, gzip, bzip2 and xz. Reading detects the compression from the file's
//! first bytes (like GNU tar), so a misnamed file still opens; `--format` then only confirms
//! it. Writing takes `--format`, else the `--out` name's suffix.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};

use crate::{CommandError, ErrorCode};

/// A tar format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TarFormat {
    /// Uncompressed.
    Tar,
    /// gzip.
    Gz,
    /// bzip2.
    Bz2,
    /// xz.
    Xz,
}

/// The accepted `--format` values, for messages.
const FORMATS: &str = "tar, tar.gz (tgz), tar.bz2 (tbz2), tar.xz (txz)";

impl TarFormat {
    /// Parses `--format`.
    ///
    /// # Errors
    /// `InvalidArgs` naming the accepted values.
    pub(super) fn parse(raw: &str) -> Result<Self, CommandError> {
        match raw.to_ascii_lowercase().trim_start_matches('.') {
            "tar" => Ok(Self::Tar),
            "tar.gz" | "tgz" | "gz" | "gzip" => Ok(Self::Gz),
            "tar.bz2" | "tbz2" | "tbz" | "bz2" | "bzip2" => Ok(Self::Bz2),
            "tar.xz" | "txz" | "xz" => Ok(Self::Xz),
            other => Err(CommandError::new(
                ErrorCode::InvalidArgs,
                format!("unknown --format '{other}'; use one of {FORMATS}"),
            )),
        }
    }

    /// The format a file name's suffix names, if any.
    pub(super) fn from_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        [
            (".tar.gz", Self::Gz),
            (".tgz", Self::Gz),
            (".tar.bz2", Self::Bz2),
            (".tbz2", Self::Bz2),
            (".tbz", Self::Bz2),
            (".tar.xz", Self::Xz),
            (".txz", Self::Xz),
            (".tar", Self::Tar),
        ]
        .iter()
        .find(|(suffix, _)| lower.ends_with(suffix))
        .map(|(_, f)| *f)
    }

    /// The canonical name, reported in `result.format`.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Tar => "tar",
            Self::Gz => "tar.gz",
            Self::Bz2 => "tar.bz2",
            Self::Xz => "tar.xz",
        }
    }

    /// The compression level used when writing (GNU tar's defaults: gzip 6, bzip2 9, xz 6).
    pub(super) fn level(self) -> Option<u32> {
        match self {
            Self::Tar => None,
            Self::Gz | Self::Xz => Some(6),
            Self::Bz2 => Some(9),
        }
    }

    /// The compression the first bytes of a file show.
    fn sniff(head: &[u8]) -> Self {
        if head.starts_with(&[0x1f, 0x8b]) {
            Self::Gz
        } else if head.starts_with(b"BZh") {
            Self::Bz2
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Self::Xz
        } else {
            Self::Tar
        }
    }
}

/// Opens a tar file for reading, decompressing as its content shows.
///
/// # Errors
/// `IoError` when it cannot be opened, `TarError` when `--format` contradicts the content.
pub(super) fn open_reader(
    path: &std::path::Path,
    shown: &str,
    requested: Option<TarFormat>,
) -> Result<(Box<dyn Read + Send>, TarFormat), CommandError> {
    let file = File::open(path).map_err(|e| CommandError::io("open", shown, &e))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let head = reader
        .fill_buf()
        .map_err(|e| CommandError::io("read", shown, &e))?;
    let found = TarFormat::sniff(head);
    if let Some(wanted) = requested.filter(|w| *w != found) {
        return Err(CommandError::new(
            ErrorCode::TarError,
            format!(
                "'{shown}' is {} but --format says {}",
                describe(found),
                wanted.as_str()
            ),
        )
        .with_hint("leave out --format: the compression is detected from the content"));
    }
    let stream: Box<dyn Read + Send> = match found {
        TarFormat::Tar => Box::new(reader),
        TarFormat::Gz => Box::new(flate2::bufread::MultiGzDecoder::new(reader)),
        TarFormat::Bz2 => Box::new(bzip2::bufread::MultiBzDecoder::new(reader)),
        TarFormat::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(reader)),
    };
    Ok((stream, found))
}

fn describe(format: TarFormat) -> &'static str {
    match format {
        TarFormat::Tar => "not compressed (or not a tar file)",
        TarFormat::Gz => "gzip-compressed",
        TarFormat::Bz2 => "bzip2-compressed",
        TarFormat::Xz => "xz-compressed",
    }
}

/// A compressing writer for a tar stream.
pub(super) enum Compressor<W: Write> {
    /// No compression.
    Plain(W),
    /// gzip.
    Gz(flate2::write::GzEncoder<W>),
    /// bzip2, a piece per core.
    Bz2(super::bz2_writer::Bz2Writer<W>),
    /// xz, multi-threaded, stopping when cancelled.
    Xz(super::xz_writer::XzWriter<W>),
}

impl<W: Write> Compressor<W> {
    /// A compressor for `format` writing into `inner`.
    ///
    /// # Errors
    /// When the xz encoder cannot be set up (out of memory).
    pub(super) fn new(format: TarFormat, inner: W, cancel: &crate::CancelFlag) -> io::Result<Self> {
        Ok(match format {
            TarFormat::Tar => Self::Plain(inner),
            TarFormat::Gz => Self::Gz(flate2::write::GzEncoder::new(
                inner,
                flate2::Compression::new(6),
            )),
            TarFormat::Bz2 => Self::Bz2(super::bz2_writer::Bz2Writer::new(inner)),
            TarFormat::Xz => Self::Xz(super::xz_writer::XzWriter::new(inner, cancel.clone())?),
        })
    }

    /// Ends the compressed stream and returns the inner writer.
    ///
    /// # Errors
    /// Write failures.
    pub(super) fn finish(self) -> io::Result<W> {
        match self {
            Self::Plain(w) => Ok(w),
            Self::Gz(e) => e.finish(),
            Self::Bz2(e) => e.finish(),
            Self::Xz(e) => e.finish(),
        }
    }
}

impl<W: Write> Write for Compressor<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(w) => w.write(buf),
            Self::Gz(e) => e.write(buf),
            Self::Bz2(e) => e.write(buf),
            Self::Xz(e) => e.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(w) => w.flush(),
            Self::Gz(e) => e.flush(),
            Self::Bz2(e) => e.flush(),
            Self::Xz(e) => e.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_magic() {
        assert_eq!(TarFormat::from_name("a.TGZ"), Some(TarFormat::Gz));
        assert_eq!(TarFormat::from_name("a.tar.xz"), Some(TarFormat::Xz));
        assert_eq!(TarFormat::from_name("a.tbz2"), Some(TarFormat::Bz2));
        assert_eq!(TarFormat::from_name("a.tar"), Some(TarFormat::Tar));
        assert_eq!(TarFormat::from_name("a.zip"), None);
        assert_eq!(TarFormat::sniff(b"BZh91AY"), TarFormat::Bz2);
        assert_eq!(TarFormat::sniff(&[0x1f, 0x8b, 8]), TarFormat::Gz);
        assert_eq!(TarFormat::parse("TXZ").unwrap(), TarFormat::Xz);
        assert_eq!(
            TarFormat::parse("7z").unwrap_err().code,
            ErrorCode::InvalidArgs
        );
    }
}
