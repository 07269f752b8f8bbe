//! `lurkbot browser status|start|stop` against a running gateway and Debian's Chromium: the
//! owner starts and stops it, a missing Chromium says how to install it, and a gateway killed
//! with SIGKILL leaves no Chromium of its home behind (its DevTools pipe closes).

use serde_json::Value;

use crate::util::{Test, start_gateway};

/// Processes whose command line names `needle`.
fn processes_naming(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

fn json(out: &crate::util::Output) -> Value {
    assert_eq!(out.status, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn the_owner_starts_and_stops_chromium_and_a_killed_gateway_leaves_none() {
    let t = Test::init();
    let stopped = json(&t.run(&["browser", "status", "--json"]));
    assert_eq!(stopped["running"], false);
    // Stopping what does not run succeeds and says so, as `systemctl stop` does.
    let idle = t.run(&["browser", "stop"]);
    assert_eq!(idle.status, 0, "{}", idle.stderr);
    assert!(
        idle.stdout
            .contains("Chromium was not running: nothing to stop"),
        "{}",
        idle.stdout
    );
    let idle = json(&t.run(&["browser", "stop", "--json"]));
    assert_eq!(
        (idle["running"].clone(), idle["stopped"].clone()),
        (false.into(), false.into())
    );
    let refused = t.run(&["browser", "start"]);
    assert_ne!(refused.status, 0);
    assert!(
        refused.stderr.contains("no gateway is running"),
        "{}",
        refused.stderr
    );

    // Without PATH the gateway cannot find Chromium, and says how to get it.
    let gw = start_gateway(&t, &[]);
    let missing = t.run(&["browser", "start"]);
    assert_ne!(missing.status, 0);
    assert!(
        missing.stderr.contains("BrowserUnavailable"),
        "{}",
        missing.stderr
    );
    assert!(
        missing.stderr.contains("apt-get install chromium"),
        "{}",
        missing.stderr
    );
    drop(gw);

    let mut gw = start_gateway(&t, &[("PATH", "/usr/bin:/bin")]);
    let started = json(&t.run(&["browser", "start", "--json"]));
    assert_eq!(started["running"], true, "{started}");
    assert!(
        started["memoryBytes"].as_u64().unwrap() > 10_000_000,
        "{started}"
    );
    let profile = t.home.join("browser/profile");
    let needle = format!("--user-data-dir={}", profile.display());
    assert!(!processes_naming(&needle).is_empty());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&profile).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    let text = t.run(&["browser", "status"]);
    assert!(text.stdout.starts_with("running: pid"), "{}", text.stdout);
    let off = json(&t.run(&["browser", "stop", "--json"]));
    assert_eq!(
        (off["running"].clone(), off["stopped"].clone()),
        (false.into(), true.into())
    );
    let again = t.run(&["browser", "stop"]);
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert!(
        again
            .stdout
            .contains("Chromium was not running: nothing to stop"),
        "{}",
        again.stdout
    );

    // Started again, then the gateway is killed: Chromium and its helpers follow it.
    json(&t.run(&["browser", "start", "--json"]));
    assert!(!processes_naming(&needle).is_empty());
    let _ = gw.child.kill();
    let _ = gw.child.wait();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !processes_naming(&needle).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "Chromium outlived the gateway: {:?}",
            processes_naming(&needle)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
