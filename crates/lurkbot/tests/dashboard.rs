//! `lurkbot dashboard`: the UI's address; the token only on a terminal or through a private page.

use std::process::Command;

use crate::util::Test;

#[test]
fn piped_output_never_carries_the_token() {
    let t = Test::init();
    let out = t.run(&["dashboard"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "http://127.0.0.1:18789/");
    assert!(!out.stdout.contains(&t.gateway_token()));
    assert!(out.stderr.contains("terminal"), "{}", out.stderr);
}

#[test]
fn a_terminal_gets_the_address_with_the_token() {
    let t = Test::init();
    let inner = format!(
        "LURKBOT_HOME='{}' '{}' dashboard",
        t.home.display(),
        env!("CARGO_BIN_EXE_lurkbot")
    );
    let out = Command::new("script")
        .args(["-qefc", &inner, "/dev/null"])
        .output()
        .expect("'script' (util-linux) is needed for this test");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!(
            "http://127.0.0.1:18789/#token={}",
            t.gateway_token()
        )),
        "{shown}"
    );
}

#[test]
fn open_passes_the_token_in_a_private_page_not_in_arguments() {
    let t = Test::init();
    // `cat` stands in for the browser: it prints the page it is given.
    let out = t.run_env(&["dashboard", "--open"], &[("LURKBOT_OPEN", "cat")]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let secret = t.gateway_token();
    assert!(
        out.stdout.contains(&format!("#token={secret}")),
        "{}",
        out.stdout
    );
    let page = std::fs::read_dir(&t.home)
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".lurkbot-dashboard-")
        })
        .expect("the forwarding page");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(page.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    // A browser that cannot be started is a failure with the fix.
    let out = t.run_env(
        &["dashboard", "--open"],
        &[("LURKBOT_OPEN", "/nonexistent/browser")],
    );
    assert_eq!(out.status, 1);
    assert!(out.stderr.contains("lurkbot dashboard"), "{}", out.stderr);
}

/// A gateway running on `--port` is the one opened, not the configured port.
#[test]
fn the_running_gateways_own_port_is_the_one_opened() {
    let t = Test::init();
    let gw = crate::util::start_gateway(&t, &[]);
    let out = t.run_env(&["dashboard", "--open"], &[("LURKBOT_OPEN", "cat")]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(&format!("http://{}/#token=", gw.addr)),
        "{}",
        out.stdout
    );
    assert!(!gw.addr.ends_with(":18789"));
    drop(gw);
}
