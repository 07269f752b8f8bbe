//! Random and mutated archives never panic and never write outside `--dest`: every answer is
//! success or a stable archive error code.

use proptest::prelude::*;

use crate::crafted::{TarItem, ZipItem, gzip, tar_bytes, zip_bytes};
use crate::fixtures::Harness;

const ALLOWED: [&str; 3] = ["ZipError", "TarError", "ArchiveTooLarge"];

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let content: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    let tar = tar_bytes(&[
        TarItem::Dir("d"),
        TarItem::File(b"d/a.txt", &content),
        TarItem::Symlink("l", "/etc"),
        TarItem::File(b"b.txt", b"bee"),
    ]);
    vec![
        (
            "zip",
            zip_bytes(&[
                ZipItem::Dir("d/"),
                ZipItem::File(b"d/a.txt", &content),
                ZipItem::File(b"b.txt", b"bee"),
            ]),
        ),
        ("tar", tar.clone()),
        ("tar", gzip(&tar)),
    ]
}

fn check(
    h: &Harness,
    kind: &str,
    bytes: &[u8],
    rt: &tokio::runtime::Runtime,
) -> Result<(), TestCaseError> {
    h.write("workspace/in.bin", bytes);
    let _ = std::fs::remove_dir_all(h.path("workspace/out"));
    for command in [
        format!("{kind} list --in workspace/in.bin"),
        format!(
            "{kind} extract --in workspace/in.bin --dest workspace/out --confirm --max-bytes 1000000"
        ),
    ] {
        let env = rt.block_on(h.run(&command));
        match env.error_code.as_deref() {
            None => prop_assert_eq!(env.exit_code, 0),
            Some(code) => {
                prop_assert!(
                    ALLOWED.contains(&code),
                    "{}: {} {}",
                    command,
                    code,
                    env.stderr
                );
                prop_assert_eq!(env.exit_code, 1);
            }
        }
    }
    // Only the input, the extraction folder and the audit log exist.
    let mut top: Vec<String> = std::fs::read_dir(h.path("workspace"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    prop_assert!(top == ["in.bin"] || top == ["in.bin", "out"], "{:?}", top);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_refused_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..2048), zip in any::<bool>()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let h = Harness::builtin();
        check(&h, if zip { "zip" } else { "tar" }, &bytes, &rt)?;
    }

    #[test]
    fn mutated_archives_are_refused_or_read(seed in 0usize..3, flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), cut in any::<prop::sample::Index>(), truncate in any::<bool>()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let h = Harness::builtin();
        let (kind, mut bytes) = seeds().swap_remove(seed);
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        check(&h, kind, &bytes, &rt)?;
    }
}
