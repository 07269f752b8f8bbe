//! `zip` and `tar`: every subcommand, flag and result field, the gates, and round trips.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lurkbot_term::{ExecRequest, Progress, ProgressSink};
use serde_json::json;

use crate::crafted::{TarItem, ZipItem, tar_bytes, tree, zip_bytes};
use crate::fixtures::Harness;

/// A small source tree with known modification times.
fn source(h: &Harness) {
    h.write("workspace/src/a.txt", b"alpha\n");
    h.write("workspace/src/sub/b.txt", &b"bravo ".repeat(10_000));
    h.write(
        "workspace/src/sub/deeper/c.bin",
        &(0..=255u8).cycle().take(70_000).collect::<Vec<_>>(),
    );
    std::fs::create_dir_all(h.path("workspace/src/empty")).unwrap();
    let t = UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    for f in ["a.txt", "sub/b.txt", "sub/deeper/c.bin"] {
        let file = std::fs::File::options()
            .write(true)
            .open(h.path(&format!("workspace/src/{f}")))
            .unwrap();
        file.set_modified(t).unwrap();
    }
}

fn mtime(path: &std::path::Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

#[tokio::test]
async fn zip_round_trip_keeps_contents_and_times() {
    let h = Harness::builtin();
    source(&h);
    for level in [0, 6, 9] {
        let env = h
            .run(&format!("zip create --src workspace/src --out workspace/l{level}.zip --confirm --level {level}"))
            .await;
        assert_eq!(env.exit_code, 0, "{}", env.stderr);
        assert_eq!(env.result["files_added"], json!(3));
        assert_eq!(env.result["dirs_added"], json!(4));
        assert_eq!(env.result["compression_level"], json!(level));
        let size = std::fs::metadata(h.path(&format!("workspace/l{level}.zip")))
            .unwrap()
            .len();
        assert_eq!(env.result["bytes_written"], json!(size));
        let dest = format!("workspace/out{level}");
        let env = h
            .run(&format!(
                "zip extract --in workspace/l{level}.zip --dest {dest} --confirm"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{}", env.stderr);
        assert_eq!(env.result["files_written"], json!(3));
        assert_eq!(env.result["encoding"], json!("utf-8"));
        assert_eq!(
            tree(&h.path(&format!("{dest}/src"))),
            tree(&h.path("workspace/src"))
        );
        assert!(h.path(&format!("{dest}/src/empty")).is_dir());
        assert_eq!(
            mtime(&h.path(&format!("{dest}/src/sub/b.txt"))),
            mtime(&h.path("workspace/src/sub/b.txt"))
        );
    }
    let stored = std::fs::metadata(h.path("workspace/l0.zip")).unwrap().len();
    let packed = std::fs::metadata(h.path("workspace/l9.zip")).unwrap().len();
    assert!(stored > 130_000 && packed < stored / 2, "{stored} {packed}");
}

#[tokio::test]
async fn tar_round_trip_in_every_format() {
    let h = Harness::builtin();
    source(&h);
    for (name, format, level) in [
        ("t.tar", "tar", json!(null)),
        ("t.tgz", "tar.gz", json!(6)),
        ("t.tar.bz2", "tar.bz2", json!(9)),
        ("t.txz", "tar.xz", json!(6)),
    ] {
        let env = h
            .run(&format!(
                "tar create --src workspace/src --out workspace/{name} --confirm"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{}", env.stderr);
        assert_eq!(env.result["format"], json!(format));
        assert_eq!(env.result["compression_level"], level);
        assert_eq!(env.result["files_added"], json!(3));
        let env = h.run(&format!("tar list --in workspace/{name}")).await;
        assert_eq!(env.result["format"], json!(format));
        assert_eq!(env.result["count_total"], json!(7));
        let a = env.result["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "src/a.txt")
            .unwrap()
            .clone();
        assert_eq!(a["uncompressed_bytes"], json!(6));
        assert_eq!(a["modified_time_ms"], json!(1_500_000_000_000i64));
        assert_eq!(a["kind"], json!("file"));
        assert_eq!(a["compressed_bytes"], json!(null));
        let dest = format!("workspace/x-{format}");
        let env = h
            .run(&format!(
                "tar extract --in workspace/{name} --dest {dest} --confirm"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{}", env.stderr);
        assert_eq!(env.result["files_written"], json!(3));
        assert_eq!(env.result["dirs_created"], json!(5));
        assert_eq!(
            tree(&h.path(&format!("{dest}/src"))),
            tree(&h.path("workspace/src"))
        );
        assert_eq!(
            mtime(&h.path(&format!("{dest}/src/sub/deeper/c.bin"))),
            UNIX_EPOCH + Duration::from_secs(1_500_000_000)
        );
    }
    // --format overrides the name (with a warning); a wrong --format on read is a TarError.
    let env = h
        .run("tar create --src workspace/src --out workspace/odd.bin --format txz --confirm")
        .await;
    assert_eq!(env.result["format"], json!("tar.xz"));
    let env = h
        .run("tar create --src workspace/src --out workspace/named.tgz --format tar --confirm")
        .await;
    assert!(env.stderr.contains("warning"), "{}", env.stderr);
    let env = h
        .run("tar list --in workspace/odd.bin --format tar.gz")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("TarError"));
    assert!(env.stderr.contains("xz-compressed"), "{}", env.stderr);
    let env = h.run("tar list --in workspace/odd.bin").await;
    assert_eq!(env.result["format"], json!("tar.xz"));
    let env = h
        .run("tar create --src workspace/src --out workspace/what.bin --confirm")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("InvalidArgs"));
    let env = h.run("tar list --in workspace/odd.bin --format rar").await;
    assert_eq!(env.error_code.as_deref(), Some("InvalidArgs"));
}

#[tokio::test]
async fn confirm_and_overwrite_gates() {
    let h = Harness::builtin();
    source(&h);
    for cmd in [
        "zip create --src workspace/src --out workspace/a.zip",
        "tar create --src workspace/src --out workspace/a.tar",
        "zip extract --in workspace/a.zip --dest workspace/o",
        "tar extract --in workspace/a.tar --dest workspace/o --overwrite",
    ] {
        let env = h.run(cmd).await;
        assert_eq!(env.error_code.as_deref(), Some("ConfirmRequired"), "{cmd}");
        assert_eq!(env.exit_code, 2);
    }
    assert!(!h.path("workspace/a.zip").exists() && !h.path("workspace/o").exists());

    // An existing archive is kept unless --overwrite --confirm, under artifacts/ too.
    for out in ["workspace/a.zip", "artifacts/zip/a.zip"] {
        h.write(out, b"precious");
        let env = h
            .run(&format!(
                "zip create --src workspace/src --out {out} --confirm"
            ))
            .await;
        assert_eq!(env.error_code.as_deref(), Some("RefuseOverwrite"), "{out}");
        assert_eq!(std::fs::read(h.path(out)).unwrap(), b"precious");
        let env = h
            .run(&format!(
                "zip create --src workspace/src --out {out} --confirm --overwrite"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{}", env.stderr);
        assert_ne!(std::fs::read(h.path(out)).unwrap(), b"precious");
    }
    // No temporary files are left next to the archive.
    let names: Vec<String> = std::fs::read_dir(h.path("workspace"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".lurkbot")),
        "{names:?}"
    );

    // Extract keeps existing files unless --overwrite --confirm.
    h.write("workspace/o/src/a.txt", b"edited");
    let env = h
        .run("zip extract --in workspace/a.zip --dest workspace/o --confirm")
        .await;
    assert_eq!(env.result["skipped"]["existing"], json!(1));
    assert_eq!(env.result["files_written"], json!(2));
    assert_eq!(
        std::fs::read(h.path("workspace/o/src/a.txt")).unwrap(),
        b"edited"
    );
    let env = h
        .run("zip extract --in workspace/a.zip --dest workspace/o --confirm --overwrite")
        .await;
    assert_eq!(env.result["skipped"]["existing"], json!(0));
    assert_eq!(
        std::fs::read(h.path("workspace/o/src/a.txt")).unwrap(),
        b"alpha\n"
    );
}

#[tokio::test]
async fn refusals_of_paths_and_arguments() {
    let h = Harness::builtin();
    source(&h);
    h.write("config.toml", b"[gateway]\ntoken = \"s3cret-token\"\n");
    h.write(
        "skills/irc-cli/secrets/.env",
        b"IRC_PASSWORD=hunter2hunter2\n",
    );
    let cases = [
        ("zip list --in workspace/missing.zip", "NotFound"),
        ("zip list --in ../x.zip", "PathEscapesAgentsRoot"),
        (
            "tar extract --in workspace/a.tar --dest /tmp --confirm",
            "PathEscapesAgentsRoot",
        ),
        ("zip list --in workspace", "InvalidArgs"),
        (
            "zip extract --in workspace/x.zip --dest workspace/src/a.txt --confirm",
            "InvalidArgs",
        ),
        ("zip list --in workspace/a.zip --max -1", "InvalidArgs"),
        ("zip list --in workspace/a.zip --max 10001", "InvalidArgs"),
        (
            "zip list --in workspace/a.zip --encoding latin1",
            "InvalidArgs",
        ),
        (
            "zip create --src workspace/src --out workspace/a.zip --confirm --level 10",
            "InvalidArgs",
        ),
        (
            "zip extract --in workspace/a.zip --dest workspace/o --confirm --max-files 0",
            "InvalidArgs",
        ),
        (
            "zip create --src config.toml --out workspace/c.zip --confirm",
            "PermissionDenied",
        ),
        (
            "tar create --src skills/irc-cli/secrets --out workspace/s.tar --confirm",
            "PermissionDenied",
        ),
        (
            "zip create --src workspace/nothing --out workspace/c.zip --confirm",
            "NotFound",
        ),
        (
            "zip create --src workspace/src --out config.toml --confirm --overwrite",
            "PermissionDenied",
        ),
        ("zip", "InvalidArgs"),
        ("tar unpack", "InvalidArgs"),
    ];
    for (cmd, code) in cases {
        let env = h.run(cmd).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some(code),
            "{cmd}: {}",
            env.stderr
        );
        let exit = if code == "NotFound" { 1 } else { 2 };
        assert_eq!(env.exit_code, exit, "{cmd}");
        assert!(!env.stderr.is_empty(), "{cmd}");
    }
    // Archiving the whole home leaves out config.toml and the skill secrets.
    let env = h
        .run("zip create --src . --out workspace/home.zip --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["secret"], json!(2));
    let env = h.run("zip list --in workspace/home.zip --max 10000").await;
    let names: Vec<&str> = env.result["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"workspace/src/a.txt"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.contains("config.toml") || n.contains("secrets")),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.contains("home.zip") || n.contains(".lurkbot-new")),
        "{names:?}"
    );
}

#[tokio::test]
async fn create_follows_links_only_inside_the_home() {
    let h = Harness::builtin();
    source(&h);
    let outside = h.dir.path().join("outside.txt");
    std::fs::write(&outside, b"outside").unwrap();
    std::os::unix::fs::symlink(&outside, h.path("workspace/src/out-link")).unwrap();
    std::os::unix::fs::symlink(
        h.path("workspace/src/a.txt"),
        h.path("workspace/src/in-link"),
    )
    .unwrap();
    std::os::unix::fs::symlink(h.path("workspace/src"), h.path("workspace/src/sub/loop")).unwrap();
    std::os::unix::fs::symlink(h.path("workspace/gone"), h.path("workspace/src/dangling")).unwrap();
    let env = h
        .run("tar create --src workspace/src --out workspace/l.tar --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["unsafe_link"], json!(3));
    assert_eq!(env.result["files_added"], json!(4));
    let env = h
        .run("tar extract --in workspace/l.tar --dest workspace/x --confirm")
        .await;
    assert_eq!(
        std::fs::read(h.path("workspace/x/src/in-link")).unwrap(),
        b"alpha\n"
    );
    assert!(!h.path("workspace/x/src/out-link").exists());
    assert_eq!(env.result["skipped"]["unsafe_link"], json!(0));
}

#[tokio::test]
async fn listings_are_capped_and_out_holds_everything() {
    let h = Harness::builtin();
    let names: Vec<String> = (0..300).map(|i| format!("dir/file-{i:03}.txt")).collect();
    let items: Vec<ZipItem<'_>> = names
        .iter()
        .map(|n| ZipItem::File(n.as_bytes(), b"data"))
        .collect();
    h.write("workspace/many.zip", &zip_bytes(&items));
    let titems: Vec<TarItem<'_>> = names
        .iter()
        .map(|n| TarItem::File(n.as_bytes(), b"data"))
        .collect();
    h.write("workspace/many.tar", &tar_bytes(&titems));
    for cmd in ["zip", "tar"] {
        let ext = if cmd == "zip" { "zip" } else { "tar" };
        let env = h
            .run(&format!("{cmd} list --in workspace/many.{ext}"))
            .await;
        assert_eq!(env.exit_code, 0, "{}", env.stderr);
        assert_eq!(env.result["count_total"], json!(300));
        assert_eq!(env.result["count_emitted"], json!(200));
        assert_eq!(env.result["truncated"], json!(true));
        assert_eq!(env.result["entries"].as_array().unwrap().len(), 200);
        assert!(env.stdout.contains("100 more entries"), "{}", env.stdout);
        let e = &env.result["entries"][0];
        for field in [
            "name",
            "compressed_bytes",
            "uncompressed_bytes",
            "is_dir",
            "modified_time_ms",
        ] {
            assert!(e.get(field).is_some(), "{cmd}: {field} missing");
        }
        let out = format!("artifacts/{cmd}/many.json");
        let env = h
            .run(&format!(
                "{cmd} list --in workspace/many.{ext} --max 5 --out {out}"
            ))
            .await;
        assert_eq!(env.result["count_emitted"], json!(5));
        assert_eq!(env.artifacts[0].path, out);
        let full: serde_json::Value =
            serde_json::from_slice(&std::fs::read(h.path(&out)).unwrap()).unwrap();
        assert_eq!(full["entries"].as_array().unwrap().len(), 300);
        assert_eq!(full["entries"][299]["name"], json!("dir/file-299.txt"));
        let env = h
            .run(&format!(
                "{cmd} list --in workspace/many.{ext} --out ../x.json"
            ))
            .await;
        assert_eq!(env.error_code.as_deref(), Some("PathEscapesAgentsRoot"));
    }
}

#[tokio::test]
async fn zip_names_in_legacy_encodings() {
    let h = Harness::builtin();
    let jp = ["資料/会議メモ.txt", "日本語のファイル.txt"];
    let sjis: Vec<Vec<u8>> = jp
        .iter()
        .map(|n| encoding_rs::SHIFT_JIS.encode(n).0.into_owned())
        .collect();
    let items: Vec<ZipItem<'_>> = sjis.iter().map(|n| ZipItem::File(n, b"jp")).collect();
    h.write("workspace/sjis.zip", &zip_bytes(&items));
    let env = h.run("zip list --in workspace/sjis.zip").await;
    assert_eq!(env.result["encoding"], json!("cp932"));
    assert_eq!(env.result["entries"][0]["name"], json!(jp[0]));
    let env = h
        .run("zip extract --in workspace/sjis.zip --dest workspace/jp --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(
        std::fs::read(h.path("workspace/jp/資料/会議メモ.txt")).unwrap(),
        b"jp"
    );

    let cn = "报告/第一季度总结.txt";
    let gbk = encoding_rs::GBK.encode(cn).0.into_owned();
    h.write(
        "workspace/gbk.zip",
        &zip_bytes(&[ZipItem::File(&gbk, b"cn")]),
    );
    let env = h
        .run("zip list --in workspace/gbk.zip --encoding gbk")
        .await;
    assert_eq!(
        (&env.result["encoding"], &env.result["entries"][0]["name"]),
        (&json!("gbk"), &json!(cn))
    );
    let env = h
        .run("zip list --in workspace/gbk.zip --encoding cp437")
        .await;
    assert_eq!(env.result["encoding"], json!("cp437"));
    assert_ne!(env.result["entries"][0]["name"], json!(cn));
}

/// Records progress calls.
#[derive(Default)]
struct Recorder {
    labels: Mutex<Vec<String>>,
    bytes: Mutex<u64>,
    ends: Mutex<u32>,
}

impl ProgressSink for Recorder {
    fn begin(&self, label: &str, _total: Option<u64>) {
        self.labels.lock().unwrap().push(label.to_string());
    }
    fn advance(&self, bytes: u64) {
        *self.bytes.lock().unwrap() += bytes;
    }
    fn relabel(&self, label: &str) {
        self.labels.lock().unwrap().push(format!("then {label}"));
    }
    fn end(&self) {
        *self.ends.lock().unwrap() += 1;
    }
}

#[tokio::test]
async fn progress_reports_every_byte() {
    let h = Harness::builtin();
    source(&h);
    let recorder = Arc::new(Recorder::default());
    let mut req =
        ExecRequest::new("zip create --src workspace/src --out workspace/p.zip --confirm");
    req.progress = Progress::new(recorder.clone());
    let env = h.run_req(req).await;
    assert_eq!(env.exit_code, 0);
    let mut req = ExecRequest::new("zip extract --in workspace/p.zip --dest workspace/p --confirm");
    req.progress = Progress::new(recorder.clone());
    h.run_req(req).await;
    assert_eq!(
        *recorder.labels.lock().unwrap(),
        ["creating workspace/p.zip", "extracting workspace/p.zip"]
    );
    assert_eq!(*recorder.bytes.lock().unwrap(), 2 * (6 + 60_000 + 70_000));
    assert_eq!(*recorder.ends.lock().unwrap(), 2);
}

/// A compressed tar counts the bytes it reads (not what the compressor has written), and says
/// when only the compressor's last blocks remain.
#[tokio::test]
async fn tar_xz_progress_counts_bytes_read_then_says_it_is_finishing() {
    let h = Harness::builtin();
    source(&h);
    let recorder = Arc::new(Recorder::default());
    let mut req =
        ExecRequest::new("tar create --src workspace/src --out workspace/p.tar.xz --confirm");
    req.progress = Progress::new(recorder.clone());
    let env = h.run_req(req).await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(
        *recorder.labels.lock().unwrap(),
        [
            "creating workspace/p.tar.xz",
            "then compressing the rest of workspace/p.tar.xz"
        ]
    );
    assert_eq!(*recorder.bytes.lock().unwrap(), 6 + 60_000 + 70_000);
    assert_eq!(*recorder.ends.lock().unwrap(), 1);
}

#[tokio::test]
async fn a_timeout_cancels_and_leaves_no_partial_files() {
    let h = Harness::builtin();
    let big: Vec<u8> = (0..40_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    h.write("workspace/big/data.bin", &big);
    h.write("workspace/big/more.bin", &big);
    let mut req =
        ExecRequest::new("tar create --src workspace/big --out workspace/big.tar.xz --confirm");
    req.timeout_ms = Some(50);
    let env = h.run_req(req).await;
    assert_eq!(env.error_code.as_deref(), Some("Timeout"));
    assert_eq!(env.exit_code, 124);
    // The blocking work notices the cancellation and removes its temporary file: within a
    // second (ARCHITECTURE.md §4.6); the loop's bound only keeps a broken build from hanging the suite.
    for _ in 0..1200 {
        let leftovers = std::fs::read_dir(h.path("workspace"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".lurkbot")
            })
            .count();
        if leftovers == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!h.path("workspace/big.tar.xz").exists());
    let names: Vec<_> = std::fs::read_dir(h.path("workspace"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["big"], "no temporary file left behind");
}
