//! `lurkbot exec zip|tar` through the binary: exit statuses, quiet stderr when piped, and the
//! progress bar on a terminal.

use std::io::{Read, Write};
use std::process::Command;

use crate::util::Test;

/// A tar.gz holding one file of `size` zeros, streamed to disk.
fn zeros_tgz(path: &std::path::Path, size: u64) {
    let file = std::fs::File::create(path).unwrap();
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "zeros.bin", std::io::repeat(0).take(size))
        .unwrap();
    builder
        .into_inner()
        .unwrap()
        .finish()
        .unwrap()
        .flush()
        .unwrap();
}

#[test]
fn zip_and_tar_through_the_binary() {
    let t = Test::init();
    std::fs::create_dir_all(t.path("workspace/docs")).unwrap();
    std::fs::write(t.path("workspace/docs/a.txt"), "a").unwrap();
    let out = t.run(&[
        "exec",
        "zip create --src workspace/docs --out workspace/d.zip --confirm",
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Created workspace/d.zip"),
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stderr, "",
        "no progress bar when stderr is not a terminal"
    );
    let out = t.run(&[
        "exec",
        "zip extract --in workspace/d.zip --dest workspace/x",
    ]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.starts_with("ConfirmRequired"), "{}", out.stderr);
    let out = t.run(&["exec", "--json", "tar list --in workspace/d.zip"]);
    assert_eq!(out.status, 1);
    assert_eq!(out.json()["error_code"], "TarError");
    let out = t.run(&["exec", "help"]);
    assert!(
        out.stdout.contains("zip") && out.stdout.contains("tar"),
        "{}",
        out.stdout
    );
    assert!(t.path("skills/archive-zip/SKILL.md").is_file());
}

#[test]
fn a_progress_bar_is_drawn_on_a_terminal_only() {
    let t = Test::init();
    std::fs::create_dir_all(t.path("workspace")).unwrap();
    zeros_tgz(&t.path("workspace/big.tar.gz"), 64 * 1024 * 1024);
    let bin = env!("CARGO_BIN_EXE_lurkbot");
    let home = t.home.to_str().unwrap();
    // The bar's delay is set, not raced: 0 shows it at the first bytes, ten minutes never within
    // this run, whatever the machine's speed.
    let run = |after_ms: u64, json: &str, dest: &str| {
        // `script` gives the binary a pseudo-terminal, as a human's shell would.
        let inner = format!(
            "LURKBOT_HOME='{home}' LURKBOT_PROGRESS_AFTER_MS={after_ms} '{bin}' exec {json} 'tar extract --in workspace/big.tar.gz --dest {dest} --confirm --max-bytes 1000000000'"
        );
        let out = Command::new("script")
            .args(["-qefc", &inner, "/dev/null"])
            .output()
            .expect("'script' (util-linux) is needed for this test");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = run(0, "", "workspace/x1");
    assert!(shown.contains("extracting workspace/big.tar.gz"), "{shown}");
    assert!(shown.contains("Extracted 1 file ("), "{shown}");
    let json = run(0, "--json", "workspace/x2");
    assert!(!json.contains("extracting workspace/big.tar.gz"), "{json}");
    assert_eq!(
        std::fs::metadata(t.path("workspace/x2/zeros.bin"))
            .unwrap()
            .len(),
        64 * 1024 * 1024
    );
    // A run shorter than the delay stays quiet on a terminal too.
    let quiet = run(600_000, "", "workspace/x3");
    assert!(
        !quiet.contains("extracting workspace/big.tar.gz"),
        "{quiet}"
    );
    assert!(quiet.contains("Extracted 1 file ("), "{quiet}");
}
