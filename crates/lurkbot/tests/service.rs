//! `lurkbot gateway install|uninstall|status`: the unit file systemd reads (checked by
//! `systemd-analyze verify`), the systemctl calls made (a recording stand-in: a test machine
//! has no user systemd), refusals, and status against a real running gateway.

use crate::util::{Test, start_gateway};

/// A `systemctl` stand-in that appends its arguments to `calls` and succeeds.
fn recording_systemctl(t: &Test) -> (String, std::path::PathBuf) {
    let calls = t.dir.path().join("calls");
    let script = t.dir.path().join("systemctl");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\ncase \"$2\" in is-enabled) echo enabled;; is-active) echo active;; esac\n",
            calls.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script.display().to_string(), calls)
}

#[test]
fn install_writes_a_valid_unit_and_uninstall_removes_it() {
    let t = Test::init();
    let (systemctl, calls) = recording_systemctl(&t);
    let env = [("LURKBOT_SYSTEMCTL", systemctl.as_str()), ("USER", "sam")];
    let out = t.run_env(&["gateway", "install"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("loginctl enable-linger sam"),
        "{}",
        out.stdout
    );
    let unit = t
        .dir
        .path()
        .join(".config/systemd/user/lurkbot-gateway.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(text.contains("Restart=on-failure"), "{text}");
    assert!(
        text.contains("ExecReload=/bin/kill -HUP $MAINPID"),
        "{text}"
    );
    let home = t.home.canonicalize().unwrap();
    assert!(
        text.contains(&format!("--home \"{}\" gateway", home.display())),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        "--user daemon-reload\n--user enable --now lurkbot-gateway.service\n"
    );
    // systemd itself accepts the file.
    let verify = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .expect("systemd-analyze (Debian package systemd) is installed by scripts/test.sh");
    let said = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success(), "{said}");
    assert!(
        !said.contains("lurkbot-gateway.service:"),
        "systemd-analyze warns about the unit: {said}"
    );

    // Installing again replaces LurkBot's own unit; a foreign one needs --force.
    assert_eq!(
        t.run_env(&["gateway", "install", "--no-start"], &env)
            .status,
        0
    );
    std::fs::write(&unit, "[Service]\nExecStart=/bin/true\n").unwrap();
    let refused = t.run_env(&["gateway", "install"], &env);
    assert_eq!(refused.status, 2);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read_to_string(&unit).unwrap(),
        "[Service]\nExecStart=/bin/true\n",
        "a foreign unit is left as it was"
    );
    let refused = t.run_env(&["gateway", "uninstall"], &env);
    assert_eq!(refused.status, 2, "{}", refused.stderr);
    assert!(unit.exists());
    assert_eq!(
        t.run_env(&["gateway", "install", "--force"], &env).status,
        0
    );

    std::fs::remove_file(&calls).unwrap();
    let out = t.run_env(&["gateway", "uninstall"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(!unit.exists());
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        "--user disable --now lurkbot-gateway.service\n--user daemon-reload\n"
    );
    let again = t.run_env(&["gateway", "uninstall"], &env);
    assert_eq!(again.status, 1);
    assert!(
        again.stderr.contains("nothing to uninstall"),
        "{}",
        again.stderr
    );
}

/// A home whose path holds a line break cannot add a line to the unit: it is refused.
#[test]
fn a_path_with_a_control_character_is_refused() {
    let t = Test::new();
    let odd = t
        .dir
        .path()
        .join("home\nExecStartPre=/bin/touch /tmp/pwned");
    let (systemctl, calls) = recording_systemctl(&t);
    let env = [("LURKBOT_SYSTEMCTL", systemctl.as_str()), ("USER", "sam")];
    let init = t
        .command(&["--home", odd.to_str().unwrap(), "init"], &env)
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let out = t
        .command(
            &["--home", odd.to_str().unwrap(), "gateway", "install"],
            &env,
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("control character"), "{stderr}");
    let units = t.dir.path().join(".config/systemd/user");
    assert!(
        std::fs::read_dir(&units).map_or(true, |mut d| d.next().is_none()),
        "no unit was written"
    );
    assert!(!calls.exists(), "systemctl was not called");
}

#[test]
fn install_without_a_user_systemd_says_what_to_run() {
    let t = Test::init();
    let env = [("LURKBOT_SYSTEMCTL", "/nonexistent/systemctl")];
    let out = t.run_env(&["gateway", "install"], &env);
    assert_eq!(out.status, 1);
    assert!(
        out.stderr
            .contains("systemctl --user enable --now lurkbot-gateway.service"),
        "{}",
        out.stderr
    );
    assert!(
        t.dir
            .path()
            .join(".config/systemd/user/lurkbot-gateway.service")
            .exists()
    );
}

#[test]
fn status_reports_a_running_gateway_and_exits_3_without_one() {
    let t = Test::init();
    let (systemctl, _) = recording_systemctl(&t);
    let env = [("LURKBOT_SYSTEMCTL", systemctl.as_str())];
    let out = t.run_env(&["gateway", "status"], &env);
    assert_eq!(out.status, 3, "{}", out.stdout);
    assert!(out.stdout.contains("unit: not installed"), "{}", out.stdout);
    assert!(
        out.stdout.contains("gateway: not running"),
        "{}",
        out.stdout
    );

    let gw = start_gateway(&t, &[]);
    let out = t.run_env(&["gateway", "status"], &env);
    assert_eq!(out.status, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "running (pid {}) on http://{}/",
            gw.child.id(),
            gw.addr
        )),
        "{}",
        out.stdout
    );
    let (status, _) = gw.stop();
    assert_eq!(status, 0);
    assert_eq!(t.run_env(&["gateway", "status"], &env).status, 3);
}
