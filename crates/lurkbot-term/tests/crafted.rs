//! Archives built byte by byte for the tests: hostile names, links, lying headers, bombs.

use std::io::{Cursor, Write};

use zip::write::{SimpleFileOptions, ZipWriter};

/// One zip entry to craft.
pub enum ZipItem<'a> {
    File(&'a [u8], &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
}

/// A deflated zip with raw (unchecked, possibly non-UTF-8) names.
pub fn zip_bytes(items: &[ZipItem<'_>]) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for item in items {
        match item {
            ZipItem::File(name, content) => {
                zip.start_file_with_options(options.name(name)).unwrap();
                zip.write_all(content).unwrap();
            }
            ZipItem::Dir(name) => zip.add_directory(*name, options).unwrap(),
            ZipItem::Symlink(name, target) => zip.add_symlink(*name, *target, options).unwrap(),
        }
    }
    zip.finish().unwrap().into_inner()
}

/// Rewrites the declared uncompressed size of every entry (local and central headers).
pub fn zip_lie_about_sizes(bytes: &mut [u8], declared: u32) {
    let mut i = 0;
    while i + 46 <= bytes.len() {
        match bytes[i..i + 4] {
            [0x50, 0x4b, 0x03, 0x04] => {
                bytes[i + 22..i + 26].copy_from_slice(&declared.to_le_bytes())
            }
            [0x50, 0x4b, 0x01, 0x02] => {
                bytes[i + 24..i + 28].copy_from_slice(&declared.to_le_bytes())
            }
            _ => {}
        }
        i += 1;
    }
}

/// One tar entry to craft.
pub enum TarItem<'a> {
    File(&'a [u8], &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
    Fifo(&'a str),
}

/// A plain tar whose names are written raw into the header (no checks).
pub fn tar_bytes(items: &[TarItem<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for item in items {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_mtime(1_600_000_000);
        let (name, data, kind, link): (&[u8], &[u8], tar::EntryType, Option<&str>) = match item {
            TarItem::File(n, d) => (n, d, tar::EntryType::Regular, None),
            TarItem::Dir(n) => (n.as_bytes(), b"", tar::EntryType::Directory, None),
            TarItem::Symlink(n, t) => (n.as_bytes(), b"", tar::EntryType::Symlink, Some(t)),
            TarItem::Hardlink(n, t) => (n.as_bytes(), b"", tar::EntryType::Link, Some(t)),
            TarItem::Fifo(n) => (n.as_bytes(), b"", tar::EntryType::Fifo, None),
        };
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        let raw = &mut header.as_old_mut().name;
        raw.fill(0);
        raw[..name.len()].copy_from_slice(name);
        if let Some(target) = link {
            let raw = &mut header.as_old_mut().linkname;
            raw[..target.len()].copy_from_slice(target.as_bytes());
        }
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

/// gzip-compresses bytes.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Every file under `dir`, relative, sorted, with contents.
pub fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if meta.is_dir() {
            walk(root, &p, out);
        } else if meta.file_type().is_symlink() {
            out.push((rel, b"<symlink>".to_vec()));
        } else {
            out.push((rel, std::fs::read(&p).unwrap()));
        }
    }
}
