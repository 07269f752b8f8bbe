//! The protection model (ARCHITECTURE.md §4.6) as every terminal command meets it: archive entries,
//! `--in`, `--out`, `--src` and `--dest`, decided on the resolved path (links followed).

use serde_json::json;

use crate::crafted::{TarItem, ZipItem, tar_bytes, tree, zip_bytes};
use crate::fixtures::Harness;

/// Names a hostile archive plants to take over the home (all protected, none unsafe by name).
const PLANTED: [&[u8]; 7] = [
    b".env",
    b"exec-approvals.json",
    b"auth/profiles.json",
    b"sessions/main/sessions.json",
    b"skills/irc-cli/secrets/.env",
    b"workspace/proj/.env",
    b"artifacts/terminal_exec/runs/forged.json",
];

fn home_with_secrets(h: &Harness) {
    h.write(".env", b"OPENAI_API_KEY=sk-real-key-123456\n");
    h.write(
        "config.toml",
        b"[gateway]\ntoken = \"gateway-token-abcdefghijklmnop\"\n",
    );
    h.write("exec-approvals.json", b"{\"allow\":[]}\n");
}

fn snapshot(h: &Harness, rel: &str) -> Option<Vec<u8>> {
    std::fs::read(h.path(rel)).ok()
}

#[tokio::test]
async fn planted_secrets_and_state_are_skipped_on_extract_even_with_overwrite() {
    for (kind, overwrite) in [("zip", false), ("zip", true), ("tar", false), ("tar", true)] {
        let h = Harness::builtin();
        home_with_secrets(&h);
        let before: Vec<_> = PLANTED
            .iter()
            .map(|n| snapshot(&h, &String::from_utf8_lossy(n)))
            .collect();
        let mut names: Vec<&[u8]> = PLANTED.to_vec();
        names.push(b"workspace/fine.txt");
        let bytes = if kind == "zip" {
            zip_bytes(
                &names
                    .iter()
                    .map(|n| ZipItem::File(n, b"OPENAI_BASE_URL=http://evil\n"))
                    .collect::<Vec<_>>(),
            )
        } else {
            tar_bytes(
                &names
                    .iter()
                    .map(|n| TarItem::File(n, b"OPENAI_BASE_URL=http://evil\n"))
                    .collect::<Vec<_>>(),
            )
        };
        h.write(&format!("workspace/in.{kind}"), &bytes);
        let flags = if overwrite { " --overwrite" } else { "" };
        let env = h
            .run(&format!(
                "{kind} extract --in workspace/in.{kind} --dest . --confirm{flags}"
            ))
            .await;
        assert_eq!(env.exit_code, 0, "{kind}: {}", env.stderr);
        assert_eq!(
            env.result["skipped"]["protected"],
            json!(PLANTED.len()),
            "{kind} {}",
            env.stdout
        );
        assert_eq!(env.result["files_written"], json!(1));
        assert!(env.stderr.contains("secrets or state"), "{}", env.stderr);
        let after: Vec<_> = PLANTED
            .iter()
            .map(|n| snapshot(&h, &String::from_utf8_lossy(n)))
            .collect();
        assert_eq!(before, after, "{kind}: a protected file changed");
        assert_eq!(
            std::fs::read(h.path("workspace/fine.txt")).unwrap(),
            b"OPENAI_BASE_URL=http://evil\n"
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_link_in_dest_does_not_reach_protected_files() {
    let h = Harness::builtin();
    home_with_secrets(&h);
    std::fs::create_dir_all(h.path("workspace")).unwrap();
    std::os::unix::fs::symlink("..", h.path("workspace/homelink")).unwrap();
    let items = [
        ZipItem::File(b"config.toml", b"[gateway]\ntoken='attacker'\n"),
        ZipItem::File(b"artifacts/terminal_exec/runs/forged.json", b"{}"),
    ];
    h.write("workspace/in.zip", &zip_bytes(&items));
    let cfg = snapshot(&h, "config.toml");
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/homelink --confirm --overwrite")
        .await;
    assert_eq!(
        env.result["skipped"]["protected"],
        json!(2),
        "{}",
        env.stdout
    );
    assert_eq!(snapshot(&h, "config.toml"), cfg);
    assert!(!h.path("artifacts/terminal_exec/runs/forged.json").exists());
    // And the link itself as a destination into state is refused outright.
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/homelink/sessions --confirm")
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("PermissionDenied"),
        "{}",
        env.stderr
    );
}

#[tokio::test]
async fn secrets_are_never_archived() {
    let h = Harness::builtin();
    home_with_secrets(&h);
    h.write("workspace/proj/.env", b"TOKEN=deep-secret-value\n");
    h.write("workspace/proj/main.rs", b"fn main() {}\n");
    h.write(".config.toml.tmp-1a2b", b"token = \"leaked-temp-copy\"\n");
    for (cmd, out) in [
        (
            "tar create --src . --out artifacts/home.tar --confirm",
            "artifacts/home.tar",
        ),
        (
            "zip create --src . --out artifacts/home.zip --confirm --level 0",
            "artifacts/home.zip",
        ),
    ] {
        let env = h.run(cmd).await;
        assert_eq!(env.exit_code, 0, "{cmd}: {}", env.stderr);
        let bytes = std::fs::read(h.path(out)).unwrap();
        for secret in [
            &b"sk-real-key"[..],
            b"gateway-token",
            b"deep-secret",
            b"leaked-temp",
        ] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret),
                "{cmd} archived {}",
                String::from_utf8_lossy(secret)
            );
        }
        assert!(
            env.result["skipped"]["secret"].as_u64().unwrap() >= 4,
            "{}",
            env.stdout
        );
    }
    for src in [".env", "workspace/proj/.env", ".config.toml.tmp-1a2b"] {
        let env = h
            .run(&format!(
                "zip create --src {src} --out artifacts/x.zip --confirm"
            ))
            .await;
        assert_eq!(env.error_code.as_deref(), Some("PermissionDenied"), "{src}");
    }
    let env = h.run("zip list --in .env").await;
    assert_eq!(env.error_code.as_deref(), Some("PermissionDenied"));
}

#[cfg(unix)]
#[tokio::test]
async fn a_hard_link_to_a_secret_is_the_secret() {
    let h = Harness::builtin();
    home_with_secrets(&h);
    std::fs::create_dir_all(h.path("workspace")).unwrap();
    std::fs::hard_link(h.path("config.toml"), h.path("workspace/hardcfg")).unwrap();
    let env = h
        .run("zip create --src workspace --out artifacts/w.zip --confirm --level 0")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    let bytes = std::fs::read(h.path("artifacts/w.zip")).unwrap();
    assert!(!bytes.windows(13).any(|w| w == b"gateway-token"));
    let env = h.run("zip list --in workspace/hardcfg").await;
    assert_eq!(env.error_code.as_deref(), Some("PermissionDenied"));
}

#[tokio::test]
async fn out_never_replaces_state_or_secrets() {
    let h = Harness::builtin();
    home_with_secrets(&h);
    h.write("sessions/main/abc.jsonl", b"{\"transcript\":1}\n");
    h.write("workspace/cal/calendar.db", b"SQLite format 3\0");
    h.write("auth/profiles.json", b"{}");
    h.write("logs/gateway.log", b"{\"level\":\"INFO\"}\n");
    for out in [
        "sessions/main/abc.jsonl",
        "workspace/cal/calendar.db",
        ".env",
        "exec-approvals.json",
        "auth/profiles.json",
        "workspace/rss/subscriptions.json",
        "cron/jobs.json",
        "logs/gateway.log",
    ] {
        let before = snapshot(&h, out);
        let env = h
            .run(&format!("help --out {out} --overwrite --confirm"))
            .await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("PermissionDenied"),
            "{out}: {}",
            env.stderr
        );
        assert_eq!(env.exit_code, 2);
        assert_eq!(snapshot(&h, out), before, "{out} changed");
    }
}

#[tokio::test]
async fn extraction_stays_whole_when_only_protected_entries_come() {
    let h = Harness::builtin();
    home_with_secrets(&h);
    let items = [ZipItem::File(b".env", b"X=1\n")];
    h.write("workspace/in.zip", &zip_bytes(&items));
    let env = h
        .run("zip extract --in workspace/in.zip --dest . --confirm --overwrite")
        .await;
    assert_eq!(env.result["files_written"], json!(0));
    assert_eq!(env.result["skipped"]["protected"], json!(1));
    // Nothing but the home's own files and the audit log.
    let names: Vec<String> = tree(h.home()).into_iter().map(|(p, _)| p).collect();
    assert!(
        names.iter().all(|n| !n.contains(".lurkbot-extract")),
        "{names:?}"
    );
}

#[tokio::test]
async fn entry_names_cannot_drive_the_terminal() {
    let h = Harness::builtin();
    let evil: &[u8] = b"evil\x1b]52;c;cm0gLXJm\x07\rfake.txt";
    h.write(
        "workspace/in.zip",
        &zip_bytes(&[ZipItem::File(evil, b"x"), ZipItem::File(b"fine.txt", b"y")]),
    );
    let env = h.run("zip list --in workspace/in.zip").await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert!(
        !env.stdout.contains('\u{1b}') && !env.stdout.contains('\r'),
        "{:?}",
        env.stdout
    );
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(
        env.result["skipped"]["unsafe_path"],
        json!(1),
        "{}",
        env.stdout
    );
    assert_eq!(env.result["files_written"], json!(1));
    assert!(!env.stdout.contains('\u{1b}'), "{:?}", env.stdout);
}

#[tokio::test]
async fn a_failure_while_moving_into_place_rolls_the_extraction_back() {
    let h = Harness::builtin();
    // Every part is short enough, but the whole path is longer than the system's PATH_MAX, so
    // creating its folders fails only once the first file is already in place.
    let deep = format!("{}x.txt", format!("{}/", "d".repeat(250)).repeat(17));
    let long: &[u8] = b"a-name-that-is-much-too-long-for-any-file-system-";
    let long = long.repeat(7);
    h.write(
        "workspace/in.zip",
        &zip_bytes(&[
            ZipItem::File(b"first.txt", b"1"),
            ZipItem::File(&long, b"2"),
            ZipItem::File(deep.as_bytes(), b"3"),
        ]),
    );
    let env = h
        .run("zip extract --in workspace/in.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("IoError"), "{}", env.stdout);
    assert!(env.error_message.unwrap().contains("were removed"));
    assert!(
        !h.path("workspace/out").exists(),
        "the run's --dest is gone again"
    );
    // A name part over 255 bytes alone is skipped, not a failure.
    h.write(
        "workspace/long.zip",
        &zip_bytes(&[
            ZipItem::File(b"first.txt", b"1"),
            ZipItem::File(&long, b"2"),
        ]),
    );
    let env = h
        .run("zip extract --in workspace/long.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["skipped"]["unsafe_path"], json!(1));
    assert_eq!(env.result["files_written"], json!(1));
}

#[tokio::test]
async fn zip_fifo_and_device_entries_are_skipped() {
    let h = Harness::builtin();
    let mut bytes = zip_bytes(&[
        ZipItem::File(b"pipe", b""),
        ZipItem::File(b"dev", b""),
        ZipItem::File(b"plain.txt", b"ok"),
    ]);
    // Mark the first two as a FIFO and a character device in their central directory records
    // (Unix "version made by", external attributes = mode << 16), as Info-ZIP records them.
    let mut seen = 0;
    let mut i = 0;
    while i + 46 <= bytes.len() {
        if bytes[i..i + 4] == [0x50, 0x4b, 0x01, 0x02] {
            let mode: u32 = match seen {
                0 => 0o010_644,
                1 => 0o020_644,
                _ => 0o100_644,
            };
            bytes[i + 5] = 3;
            bytes[i + 38..i + 42].copy_from_slice(&(mode << 16).to_le_bytes());
            seen += 1;
        }
        i += 1;
    }
    assert_eq!(seen, 3);
    h.write("workspace/special.zip", &bytes);
    let env = h
        .run("zip extract --in workspace/special.zip --dest workspace/out --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(
        env.result["skipped"]["unsupported"],
        json!(2),
        "{}",
        env.stdout
    );
    assert_eq!(env.result["files_written"], json!(1));
    assert!(!h.path("workspace/out/pipe").exists() && !h.path("workspace/out/dev").exists());
}

#[tokio::test]
async fn group_sessions_cannot_archive_private_memory() {
    let h = Harness::builtin();
    h.write("workspace/MEMORY.md", b"PRIVATE-NOTE-42\n");
    h.write("workspace/memory/2026-11-01.md", b"DIARY-7\n");
    h.write("workspace/shared.md", b"public\n");
    let group = lurkbot_core::SessionKey::parse("agent:main:group:irc:lurkers").unwrap();
    let run = |command: &str| {
        let mut req = lurkbot_term::ExecRequest::new(command);
        req.session = group.clone();
        req
    };
    let env = h
        .run_req(run(
            "zip create --src workspace --out artifacts/g.zip --confirm --level 0",
        ))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    let bytes = std::fs::read(h.path("artifacts/g.zip")).unwrap();
    for private in [&b"PRIVATE-NOTE-42"[..], b"DIARY-7"] {
        assert!(!bytes.windows(private.len()).any(|w| w == private));
    }
    assert!(bytes.windows(6).any(|w| w == b"public"));
    let env = h
        .run_req(run(
            "zip create --src workspace/MEMORY.md --out artifacts/m.zip --confirm",
        ))
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("PermissionDenied"),
        "{}",
        env.stderr
    );
    // The owner's own session archives it.
    let env = h
        .run("zip create --src workspace --out artifacts/o.zip --confirm --level 0")
        .await;
    let bytes = std::fs::read(h.path("artifacts/o.zip")).unwrap();
    assert_eq!(env.exit_code, 0);
    assert!(bytes.windows(15).any(|w| w == b"PRIVATE-NOTE-42"));
}
