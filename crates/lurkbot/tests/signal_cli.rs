//! signal-cli from the CLI: `lurkbot channels login signal` runs `signal-cli link` and draws
//! its `sgnl://linkdevice` code, or says what to run when LurkBot does not run signal-cli;
//! `lurkbot doctor` names a signal-cli too old for the Signal service, a new enough one, a
//! daemon that answers (its JSON-RPC `version`) and one that does not, with the fix.

use lurkbot_test_support::signal_cli_fake::FakeSignalCli;
use lurkbot_test_support::signal_server::SignalServer;

use crate::util::Test;

const ACCOUNT: &str = "+15550001111";

fn with_signal(t: &Test, settings: &str) {
    let path = t.path("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(&format!(
        "\n[channels.signal]\naccount = \"{ACCOUNT}\"\n{settings}"
    ));
    std::fs::write(&path, config).unwrap();
}

#[test]
fn login_links_signal_cli_by_its_code_or_says_what_to_run() {
    let t = Test::init();
    with_signal(&t, "");
    let steps = t.run(&["channels", "login", "signal"]);
    assert_eq!(steps.status, 0, "{}", steps.stderr);
    assert!(
        steps.stdout.contains(&format!(
            "signal-cli -a {ACCOUNT} daemon --http 127.0.0.1:8080"
        )),
        "{}",
        steps.stdout
    );
    assert!(
        steps.stdout.contains("signal-cli link -n LurkBot"),
        "{}",
        steps.stdout
    );

    let dir = tempfile::tempdir().unwrap();
    let cli = FakeSignalCli::install(dir.path(), "0.14.6");
    let t = Test::init();
    with_signal(&t, &format!("cli = \"{}\"\n", cli.program().display()));
    let linked = t.run(&["channels", "login", "signal"]);
    assert_eq!(linked.status, 0, "{}", linked.stderr);
    assert!(
        linked.stdout.contains('▀') || linked.stdout.contains('█'),
        "no QR drawn: {}",
        linked.stdout
    );
    assert!(
        linked.stdout.contains("Settings → Linked devices"),
        "{}",
        linked.stdout
    );
    assert!(
        linked
            .stdout
            .contains(&format!("Signal linked as {ACCOUNT}")),
        "{}",
        linked.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_when_signal_cli_is_too_old_or_its_daemon_does_not_answer() {
    let check = |t: &Test| {
        let out = t.run(&["doctor", "--json"]);
        out.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|c| c["check"] == "signal")
            .unwrap_or_else(|| panic!("no signal check: {}", out.stdout))
    };
    let dir = tempfile::tempdir().unwrap();
    let old = FakeSignalCli::install(dir.path(), "0.13.2");
    let t = Test::init();
    with_signal(&t, &format!("cli = \"{}\"\n", old.program().display()));
    let found = check(&t);
    assert_eq!(found["status"], "fail", "{found}");
    assert!(
        found["detail"]
            .as_str()
            .unwrap()
            .contains("0.13.2 is older than 0.14.5"),
        "{found}"
    );
    assert!(
        found["fix"].as_str().unwrap().contains("update signal-cli"),
        "{found}"
    );

    let dir = tempfile::tempdir().unwrap();
    let new = FakeSignalCli::install(dir.path(), "0.14.6");
    let t = Test::init();
    with_signal(&t, &format!("cli = \"{}\"\n", new.program().display()));
    let found = check(&t);
    assert_eq!(found["status"], "ok", "{found}");
    assert_eq!(found["detail"], "signal-cli 0.14.6");

    // The owner's own daemon: asked its version over JSON-RPC.
    let daemon = SignalServer::start(ACCOUNT);
    let t = Test::init();
    with_signal(&t, &format!("base_url = \"{}\"\n", daemon.url()));
    let found = tokio::task::spawn_blocking(move || check(&t))
        .await
        .unwrap();
    assert_eq!(found["status"], "ok", "{found}");
    drop(daemon);

    let port = lurkbot_test_support::ports::free_port();
    let t = Test::init();
    with_signal(&t, &format!("base_url = \"http://127.0.0.1:{port}\"\n"));
    let found = tokio::task::spawn_blocking(move || check(&t))
        .await
        .unwrap();
    assert_eq!(found["status"], "fail", "{found}");
    assert!(
        found["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("daemon --http 127.0.0.1:{port}")),
        "{found}"
    );
}
