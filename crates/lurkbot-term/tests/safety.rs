//! ZipSlip / TarSlip, links, bombs and corrupt archives: each with a crafted archive.

use serde_json::json;

use crate::crafted::{TarItem, ZipItem, gzip, tar_bytes, tree, zip_bytes, zip_lie_about_sizes};
use crate::fixtures::Harness;

const HOSTILE: [&[u8]; 5] = [
    b"../evil.txt",
    b"/abs.txt",
    b"a/../../b.txt",
    b"C:\\x.txt",
    b"nul\0.txt",
];

/// Files anywhere in the test directory outside the extraction folder.
fn outside_files(h: &Harness) -> Vec<String> {
    tree(h.dir.path())
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| {
            !p.starts_with("home/workspace/out/")
                && !p.starts_with("home/workspace/in")
                && !p.starts_with("home/artifacts/terminal_exec/")
        })
        .collect()
}

#[tokio::test]
async fn zip_slip_names_are_skipped_and_counted() {
    let h = Harness::builtin();
    let mut items: Vec<ZipItem<'_>> = HOSTILE.iter().map(|n| ZipItem::File(n, b"pwned")).collect();
    items.push(ZipItem::File(b"ok/good.txt", b"fine"));
    h.write("workspace/in.zip", &zip_bytes(&items));
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["unsafe_path"], json!(5));
    assert_eq!(env.result["files_written"], json!(1));
    assert_eq!(env.result["skipped_entries"].as_array().unwrap().len(), 5);
    assert!(env.stderr.contains("warning"), "{}", env.stderr);
    assert_eq!(
        tree(&h.path("workspace/out")),
        vec![("ok/good.txt".to_string(), b"fine".to_vec())]
    );
    assert_eq!(outside_files(&h), Vec::<String>::new());
}

#[tokio::test]
async fn tar_slip_names_are_skipped_and_counted() {
    let h = Harness::builtin();
    // A NUL ends a name inside a tar header, so tar gets the four others.
    let mut items: Vec<TarItem<'_>> = HOSTILE[..4]
        .iter()
        .map(|n| TarItem::File(n, b"pwned"))
        .collect();
    items.push(TarItem::File(b"ok/good.txt", b"fine"));
    h.write("workspace/in.tar.gz", &gzip(&tar_bytes(&items)));
    let env = h
        .run("tar extract --in workspace/in.tar.gz --dest workspace/out --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["format"], json!("tar.gz"));
    assert_eq!(env.result["skipped"]["unsafe_path"], json!(4));
    assert_eq!(
        tree(&h.path("workspace/out")),
        vec![("ok/good.txt".to_string(), b"fine".to_vec())]
    );
    assert_eq!(outside_files(&h), Vec::<String>::new());
}

#[tokio::test]
async fn links_are_never_created_and_nothing_goes_through_them() {
    let h = Harness::builtin();
    let outside = h.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let target = outside.to_str().unwrap();
    h.write(
        "workspace/in.tar",
        &tar_bytes(&[
            TarItem::Symlink("link", target),
            TarItem::File(b"link/pwned.txt", b"through the link"),
            TarItem::Hardlink("hard", "/etc/passwd"),
            TarItem::Fifo("pipe"),
        ]),
    );
    let env = h
        .run("tar extract --in workspace/in.tar --dest workspace/out --confirm --no-symlinks")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["unsafe_link"], json!(2));
    assert_eq!(env.result["skipped"]["unsupported"], json!(1));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // The file landed in a real folder named "link" inside --dest.
    let link = h.path("workspace/out/link");
    assert!(
        !std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read(link.join("pwned.txt")).unwrap(),
        b"through the link"
    );

    h.write(
        "workspace/in.zip",
        &zip_bytes(&[
            ZipItem::Symlink("zlink", target),
            ZipItem::File(b"zlink/pwned.txt", b"z"),
        ]),
    );
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["unsafe_link"], json!(1));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(h.path("workspace/out/zlink/pwned.txt").is_file());
}

#[tokio::test]
async fn a_link_already_in_dest_is_not_followed() {
    let h = Harness::builtin();
    let outside = h.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir_all(h.path("workspace/out")).unwrap();
    std::os::unix::fs::symlink(&outside, h.path("workspace/out/escape")).unwrap();
    h.write(
        "workspace/in.zip",
        &zip_bytes(&[ZipItem::File(b"escape/x.txt", b"x")]),
    );
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/out --confirm --overwrite")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["unsafe_path"], json!(1));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[tokio::test]
async fn protected_files_of_the_home_are_never_written() {
    let h = Harness::builtin();
    h.write("config.toml", b"# mine\n");
    h.write(
        "workspace/in.zip",
        &zip_bytes(&[
            ZipItem::File(b"config.toml", b"[gateway]\nauth = \"none\"\n"),
            ZipItem::File(b"skills/x/secrets/.env", b"TOKEN=stolen"),
            ZipItem::File(b"artifacts/terminal_exec/runs/fake.json", b"{}"),
        ]),
    );
    let env = h
        .run("zip extract --in workspace/in.zip --dest . --confirm --overwrite")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["protected"], json!(3));
    assert_eq!(std::fs::read(h.path("config.toml")).unwrap(), b"# mine\n");
    assert!(!h.path("skills/x/secrets/.env").exists());
    for dest in ["artifacts/terminal_exec", "skills/x/secrets"] {
        let env = h
            .run(&format!(
                "zip extract --in workspace/in.zip --dest {dest} --confirm"
            ))
            .await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("PermissionDenied"),
            "{dest}"
        );
    }
}

#[tokio::test]
async fn a_bomb_stops_at_max_bytes_and_leaves_nothing() {
    let h = Harness::builtin();
    let zeros = vec![0u8; 8 * 1024 * 1024];
    h.write(
        "workspace/in.zip",
        &zip_bytes(&[
            ZipItem::File(b"first.txt", b"small"),
            ZipItem::File(b"zeros.bin", &zeros),
        ]),
    );
    assert!(std::fs::metadata(h.path("workspace/in.zip")).unwrap().len() < 100_000);
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/out --confirm --max-bytes 1000000")
        .await;
    // The entry declares 8 MiB: skipped as too large on its own, the rest extracted.
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["too_large"], json!(1));
    assert_eq!(env.result["files_written"], json!(1));

    // The same archive lying about the size: caught on the bytes actually read.
    let mut lying = zip_bytes(&[ZipItem::File(b"zeros.bin", &zeros)]);
    zip_lie_about_sizes(&mut lying, 100);
    h.write("workspace/in-lying.zip", &lying);
    let env = h
        .run("zip extract --in workspace/in-lying.zip --dest workspace/out2 --confirm --max-bytes 1000000")
        .await;
    assert_eq!(env.exit_code, 1);
    let code = env.error_code.clone().unwrap();
    assert!(code == "ZipError" || code == "ArchiveTooLarge", "{code}");
    assert!(
        !h.path("workspace/out2").exists(),
        "nothing may be left behind"
    );

    // A tar.gz bomb: 8 MiB of zeros in ~8 KiB, header honest, total over the limit.
    let tar = tar_bytes(&[
        TarItem::File(b"a.bin", &zeros[..600_000]),
        TarItem::File(b"b.bin", &zeros[..600_000]),
    ]);
    h.write("workspace/in.tgz", &gzip(&tar));
    let env = h
        .run(
            "tar extract --in workspace/in.tgz --dest workspace/out3 --confirm --max-bytes 1000000",
        )
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("ArchiveTooLarge"),
        "{}",
        env.stderr
    );
    assert_eq!(env.result["max_bytes"], json!(1_000_000));
    assert!(env.stderr.contains("--max-bytes"), "{}", env.stderr);
    assert!(!h.path("workspace/out3").exists());
}

#[tokio::test]
async fn too_many_entries_is_archive_too_large_and_keeps_dest_as_it_was() {
    let h = Harness::builtin();
    let names: Vec<String> = (0..30).map(|i| format!("f{i}.txt")).collect();
    let zip_items: Vec<ZipItem<'_>> = names
        .iter()
        .map(|n| ZipItem::File(n.as_bytes(), b"x"))
        .collect();
    let tar_items: Vec<TarItem<'_>> = names
        .iter()
        .map(|n| TarItem::File(n.as_bytes(), b"x"))
        .collect();
    h.write("workspace/in.zip", &zip_bytes(&zip_items));
    h.write("workspace/in.tar", &tar_bytes(&tar_items));
    h.write("workspace/out/keep.txt", b"mine");
    for cmd in [
        "zip extract --in workspace/in.zip --dest workspace/out --confirm --max-files 10",
        "tar extract --in workspace/in.tar --dest workspace/out --confirm --max-files 10",
    ] {
        let env = h.run(cmd).await;
        assert_eq!(env.error_code.as_deref(), Some("ArchiveTooLarge"), "{cmd}");
        assert_eq!(env.exit_code, 1);
        assert_eq!(env.result["max_files"], json!(10));
        assert_eq!(
            tree(&h.path("workspace/out")),
            vec![("keep.txt".to_string(), b"mine".to_vec())],
            "{cmd}"
        );
    }
}

#[tokio::test]
async fn corrupt_and_truncated_archives_are_clear_errors() {
    let h = Harness::builtin();
    let good_zip = zip_bytes(&[ZipItem::File(b"a.txt", &vec![b'a'; 50_000])]);
    let good_tgz = gzip(&tar_bytes(&[TarItem::File(b"a.txt", &vec![b'a'; 50_000])]));
    let mut flipped = good_tgz.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0xff;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "workspace/in-random.zip",
            b"this is not a zip archive at all".to_vec(),
            "ZipError",
        ),
        (
            "workspace/in-cut.zip",
            good_zip[..good_zip.len() / 2].to_vec(),
            "ZipError",
        ),
        (
            "workspace/in-cut.tgz",
            good_tgz[..good_tgz.len() / 2].to_vec(),
            "TarError",
        ),
        ("workspace/in-flipped.tgz", flipped, "TarError"),
        ("workspace/in-text.tar", vec![b'x'; 1024], "TarError"),
    ];
    for (path, bytes, code) in cases {
        h.write(path, &bytes);
        let cmd = if code == "ZipError" { "zip" } else { "tar" };
        let list = format!("{cmd} list --in {path}");
        let extract = format!("{cmd} extract --in {path} --dest workspace/out --confirm");
        for command in [list, extract] {
            let env = h.run(&command).await;
            assert_eq!(
                env.error_code.as_deref(),
                Some(code),
                "{command}: {}",
                env.stderr
            );
            assert_eq!(env.exit_code, 1);
            assert!(
                env.stderr.lines().count() >= 2,
                "a hint follows: {}",
                env.stderr
            );
        }
        assert!(!h.path("workspace/out").exists(), "{path}");
    }
}
