//! Interoperability with the classic tools: Debian's `zip`/`unzip` and GNU `tar` (gz, bz2, xz).
//! The tools must be installed (`scripts/test.sh` installs them); a missing tool fails loudly.

use std::os::unix::ffi::OsStrExt;
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;

use crate::crafted::tree;
use crate::fixtures::Harness;

/// Runs a classic tool in `dir` and insists it succeeds.
fn tool(dir: &std::path::Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .output()
        .unwrap_or_else(|e| panic!("'{program}' is needed for this test (scripts/test.sh installs zip unzip tar xz-utils bzip2): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn source(h: &Harness) {
    h.write("workspace/src/readme.txt", b"read me\n");
    h.write(
        "workspace/src/data/numbers.csv",
        (0..20_000)
            .map(|i| format!("{i},{}\n", i * i))
            .collect::<String>()
            .as_bytes(),
    );
    h.write(
        "workspace/src/data/blob.bin",
        &(0..100_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect::<Vec<_>>(),
    );
    let long = format!(
        "workspace/src/{}/{}.txt",
        "long-folder-name".repeat(5),
        "x".repeat(80)
    );
    h.write(&long, b"long names need GNU or PAX headers");
    h.write("workspace/src/ünïcödé/日本.txt", b"utf-8 names");
    let t = UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for (p, _) in tree(&h.path("workspace/src")) {
        std::fs::File::options()
            .write(true)
            .open(h.path(&format!("workspace/src/{p}")))
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
}

fn mtimes(dir: &std::path::Path) -> Vec<(String, u64)> {
    tree(dir)
        .into_iter()
        .map(|(p, _)| {
            let m = std::fs::metadata(dir.join(&p)).unwrap().modified().unwrap();
            (p, m.duration_since(UNIX_EPOCH).unwrap().as_secs())
        })
        .collect()
}

#[tokio::test]
async fn archives_made_by_zip_and_tar_extract_correctly() {
    let h = Harness::builtin();
    source(&h);
    let ws = h.path("workspace");
    tool(&ws, "zip", &["-qr", "by-zip.zip", "src"]);
    tool(&ws, "tar", &["czf", "by-tar.tar.gz", "src"]);
    tool(&ws, "tar", &["cjf", "by-tar.tar.bz2", "src"]);
    tool(&ws, "tar", &["cJf", "by-tar.tar.xz", "src"]);
    tool(
        &ws,
        "tar",
        &["--format=posix", "-cf", "by-tar-pax.tar", "src"],
    );
    for (name, cmd) in [
        ("by-zip.zip", "zip"),
        ("by-tar.tar.gz", "tar"),
        ("by-tar.tar.bz2", "tar"),
        ("by-tar.tar.xz", "tar"),
        ("by-tar-pax.tar", "tar"),
    ] {
        let dest = format!("workspace/x-{name}");
        let env = h
            .run(&format!(
                "{cmd} extract --in workspace/{name} --dest {dest} --confirm"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{name}: {}", env.stderr);
        assert_eq!(env.result["files_written"], json!(5), "{name}");
        let got = h.path(&format!("{dest}/src"));
        assert_eq!(tree(&got), tree(&h.path("workspace/src")), "{name}");
        assert_eq!(mtimes(&got), mtimes(&h.path("workspace/src")), "{name}");
    }
}

#[tokio::test]
async fn archives_we_make_are_read_by_unzip_and_tar() {
    let h = Harness::builtin();
    source(&h);
    let ws = h.path("workspace");
    let env = h
        .run("zip create --src workspace/src --out workspace/ours.zip --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    tool(&ws, "unzip", &["-tq", "ours.zip"]);
    tool(&ws, "unzip", &["-q", "ours.zip", "-d", "by-unzip"]);
    assert_eq!(tree(&ws.join("by-unzip/src")), tree(&ws.join("src")));
    assert_eq!(mtimes(&ws.join("by-unzip/src")), mtimes(&ws.join("src")));
    for ext in ["tar", "tar.gz", "tar.bz2", "tar.xz"] {
        let env = h
            .run(&format!(
                "tar create --src workspace/src --out workspace/ours.{ext} --confirm"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{}", env.stderr);
        let dir = format!("by-tar-{ext}");
        std::fs::create_dir(ws.join(&dir)).unwrap();
        tool(&ws, "tar", &["xf", &format!("ours.{ext}"), "-C", &dir]);
        assert_eq!(
            tree(&ws.join(&dir).join("src")),
            tree(&ws.join("src")),
            "{ext}"
        );
        assert_eq!(
            mtimes(&ws.join(&dir).join("src")),
            mtimes(&ws.join("src")),
            "{ext}"
        );
    }
}

/// A `tar.bz2` large enough to be compressed in several pieces at once (one bzip2 stream each)
/// is one archive to `bzip2 -t` and GNU tar, and to our own reader.
#[tokio::test]
async fn a_bz2_compressed_in_pieces_is_one_archive_to_bzip2_and_tar() {
    let h = Harness::builtin();
    let ws = h.path("workspace");
    std::fs::create_dir_all(ws.join("big")).unwrap();
    // 3 MB of text that does not repeat within a bzip2 block.
    let mut state = 0x2545_f491_u32;
    let text: Vec<u8> = (0..3_000_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            b"lorem ipsum dolor sit amet\n"[(state % 27) as usize]
        })
        .collect();
    std::fs::write(ws.join("big/words.txt"), &text).unwrap();
    std::fs::write(ws.join("big/small.txt"), "small\n").unwrap();
    let env = h
        .run("tar create --src workspace/big --out workspace/big.tar.bz2 --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    let packed = std::fs::read(ws.join("big.tar.bz2")).unwrap();
    let streams = packed.windows(4).filter(|w| w == b"BZh9").count();
    assert!(streams >= 4, "{streams} bzip2 streams");
    tool(&ws, "bzip2", &["-t", "big.tar.bz2"]);
    std::fs::create_dir(ws.join("by-tar")).unwrap();
    tool(&ws, "tar", &["xjf", "big.tar.bz2", "-C", "by-tar"]);
    assert!(std::fs::read(ws.join("by-tar/big/words.txt")).unwrap() == text);
    assert_eq!(tree(&ws.join("by-tar/big")), tree(&ws.join("big")));
    let env = h
        .run("tar extract --in workspace/big.tar.bz2 --dest workspace/ours --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert!(std::fs::read(ws.join("ours/big/words.txt")).unwrap() == text);
}

#[tokio::test]
async fn zip_of_legacy_named_files_decodes_with_auto() {
    let h = Harness::builtin();
    let ws = h.path("workspace");
    std::fs::create_dir_all(ws.join("legacy")).unwrap();
    // File names as a Japanese Windows machine would write them: Shift_JIS bytes on disk.
    for name in ["報告書.txt", "議事録のメモ.txt"] {
        let bytes = encoding_rs::SHIFT_JIS.encode(name).0.into_owned();
        std::fs::write(
            ws.join("legacy").join(std::ffi::OsStr::from_bytes(&bytes)),
            name,
        )
        .unwrap();
    }
    tool(&ws, "zip", &["-qr", "legacy.zip", "legacy"]);
    let env = h
        .run("zip extract --in workspace/legacy.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["encoding"], json!("cp932"));
    assert_eq!(
        std::fs::read_to_string(ws.join("out/legacy/報告書.txt")).unwrap(),
        "報告書.txt"
    );
}

#[tokio::test]
async fn an_encrypted_zip_is_a_clear_zip_error() {
    let h = Harness::builtin();
    h.write("workspace/plain.txt", b"secret content");
    // The password only protects test data; it is not a LurkBot secret.
    tool(
        &h.path("workspace"),
        "zip",
        &["-q", "-P", "pw", "locked.zip", "plain.txt"],
    );
    let env = h
        .run("zip extract --in workspace/locked.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("ZipError"),
        "{}",
        env.stderr
    );
    assert!(env.stderr.contains("encrypted"), "{}", env.stderr);
    assert!(!h.path("workspace/out").exists());
    // Listing needs no decryption.
    let env = h.run("zip list --in workspace/locked.zip").await;
    assert_eq!(env.result["count_total"], json!(1));
}

/// `zip list` reads the central directory itself (streamed): Info-ZIP's zip64 records
/// (`zip -fz`: the zip64 end record and locator, sizes in the 0x0001 field), an archive behind a
/// self-extractor's stub whose offsets were not adjusted, and `--out` holding what the summary
/// counted — every file with its size and time as the source tree has them.
#[tokio::test]
async fn zip_list_reads_zip64_records_and_archives_behind_a_stub() {
    let h = Harness::builtin();
    source(&h);
    let ws = h.path("workspace");
    tool(&ws, "zip", &["-qr", "-fz", "z64.zip", "src"]);
    let mut sfx = b"#!/bin/sh\necho 'a self-extractor stub'\nexit 0\n".repeat(50);
    sfx.extend(std::fs::read(ws.join("z64.zip")).unwrap());
    std::fs::write(ws.join("sfx.zip"), sfx).unwrap();
    let files = tree(&ws.join("src"));
    for name in ["z64.zip", "sfx.zip"] {
        let out = format!("artifacts/{name}.json");
        let env = h
            .run(&format!(
                "zip list --in workspace/{name} --max 2 --out {out}"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{name}: {}", env.stderr);
        let full: serde_json::Value =
            serde_json::from_slice(&std::fs::read(h.path(&out)).unwrap()).unwrap();
        let entries = full["entries"].as_array().unwrap();
        assert_eq!(full["count_total"], env.result["count_total"]);
        assert_eq!(entries.len() as u64, full["count_total"].as_u64().unwrap());
        assert_eq!(env.result["entries"].as_array().unwrap()[..], entries[..2]);
        assert_eq!(env.result["truncated"], json!(true));
        for (path, bytes) in &files {
            let entry = entries
                .iter()
                .find(|e| e["name"] == json!(format!("src/{path}")))
                .unwrap_or_else(|| panic!("{name}: src/{path} is not listed: {entries:?}"));
            assert_eq!(entry["uncompressed_bytes"], json!(bytes.len()), "{path}");
            assert_eq!(
                entry["modified_time_ms"],
                json!(1_600_000_000_000u64),
                "{path}"
            );
            assert_eq!(entry["is_dir"], json!(false));
        }
        let dirs: Vec<_> = entries
            .iter()
            .filter(|e| e["is_dir"] == json!(true))
            .collect();
        assert!(
            dirs.iter()
                .all(|e| e["name"].as_str().unwrap().ends_with('/')),
            "{dirs:?}"
        );
        assert_eq!(entries.len(), files.len() + dirs.len());
    }
}
