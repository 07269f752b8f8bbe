//! `lurkbot init`.

use crate::util::{Test, tree};

#[test]
fn creates_the_layout_with_a_private_config() {
    let t = Test::new();
    let out = t.run(&["init"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("created  config.toml"),
        "{}",
        out.stdout
    );
    for rel in [
        "config.toml",
        "workspace/AGENTS.md",
        "workspace/SOUL.md",
        "workspace/TOOLS.md",
        "workspace/IDENTITY.md",
        "workspace/USER.md",
        "workspace/HEARTBEAT.md",
        "workspace/MEMORY.md",
        "workspace/BOOTSTRAP.md",
        "workspace/memory",
        "artifacts/terminal_exec/runs",
        "skills/terminal-exec/SKILL.md",
        "sessions",
        "cron",
        "auth",
        "memory",
    ] {
        assert!(t.path(rel).exists(), "{rel} missing");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(t.path("config.toml"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    assert!(config.starts_with("# LurkBot settings"), "commented config");
    assert!(!config.contains("@TOKEN@"));
    let skill = std::fs::read_to_string(t.path("skills/terminal-exec/SKILL.md")).unwrap();
    assert!(skill.starts_with("---\nname: terminal-exec\n") && skill.contains("## help"));
}

#[test]
fn never_overwrites_existing_files() {
    let t = Test::init();
    std::fs::write(t.path("workspace/SOUL.md"), "my own soul").unwrap();
    std::fs::write(t.path("config.toml"), "# mine\n").unwrap();
    std::fs::remove_file(t.path("workspace/USER.md")).unwrap();
    let before = tree(&t.home);
    let out = t.run(&["init"]);
    assert_eq!(out.status, 0);
    assert!(
        out.stdout.contains("kept     workspace/SOUL.md"),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(t.path("workspace/SOUL.md")).unwrap(),
        "my own soul"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("config.toml")).unwrap(),
        "# mine\n"
    );
    assert!(
        t.path("workspace/USER.md").exists(),
        "a missing file is recreated"
    );
    let after = tree(&t.home);
    assert!(before.iter().all(|f| after.contains(f)));
}

#[test]
fn home_flag_wins_over_the_environment() {
    let t = Test::new();
    let other = t.dir.path().join("other");
    let out = t.run(&["--home", other.to_str().unwrap(), "init", "-q"]);
    assert_eq!(out.status, 0);
    assert!(other.join("config.toml").exists());
    assert!(!t.home.exists());
}

#[test]
fn every_bundled_skill_has_a_private_secrets_folder_and_the_calendar_an_example() {
    let t = Test::init();
    use std::os::unix::fs::PermissionsExt;
    let skills: Vec<_> = std::fs::read_dir(t.path("skills"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(skills.iter().any(|s| s == "calendar-cli"), "{skills:?}");
    for skill in &skills {
        let dir = t.path(&format!("skills/{skill}/secrets"));
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{skill}");
    }
    let example =
        std::fs::read_to_string(t.path("skills/calendar-cli/secrets/.env.example")).unwrap();
    assert!(
        example.contains("CALDAV_USERNAME=") && example.contains("CALDAV_PASSWORD="),
        "{example}"
    );
    // The README's step now works: the folder is there to write the .env into.
    std::fs::write(
        t.path("skills/calendar-cli/secrets/.env"),
        "CALDAV_USERNAME=alice\n",
    )
    .unwrap();
    // Running init again keeps it.
    assert_eq!(t.run(&["init"]).status, 0);
    assert!(t.path("skills/calendar-cli/secrets/.env").exists());
}
