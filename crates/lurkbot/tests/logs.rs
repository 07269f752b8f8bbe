//! The gateway's log file and `lurkbot logs`, and reloading a running gateway's config (SIGHUP,
//! `lurkbot config set`).

use std::io::{Read, Write};

use crate::util::{Test, start_gateway};

fn get(addr: &str, path: &str, token: Option<&str>) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn the_gateway_logs_requests_and_auth_failures_without_secrets() {
    let t = Test::init();
    let token = t.gateway_token();
    let gw = start_gateway(&t, &[]);
    assert!(get(&gw.addr, "/health", None).starts_with("HTTP/1.1 200"));
    let wrong = "wrong-secret-0123456789";
    assert!(get(&gw.addr, "/v1/models?key=query-secret", Some(wrong)).starts_with("HTTP/1.1 401"));
    assert!(get(&gw.addr, "/v1/models", Some(&token)).starts_with("HTTP/1.1 200"));
    let (status, stderr) = gw.stop();
    assert_eq!(status, 0);
    assert!(stderr.contains("auth failure"), "{stderr}");

    let log = std::fs::read_to_string(t.path("logs/gateway.log")).unwrap();
    for secret in [token.as_str(), wrong, "query-secret"] {
        assert!(!log.contains(secret), "{secret} reached the log: {log}");
        assert!(!stderr.contains(secret), "{secret} reached stderr");
    }
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let find = |message: &str, key: &str, value: serde_json::Value| {
        lines
            .iter()
            .find(|l| l["message"] == message && l[key] == value)
            .unwrap_or_else(|| panic!("no '{message}' with {key}={value} in {log}"))
    };
    let refused = find("request", "status", 401.into());
    assert_eq!(refused["path"], "/v1/models");
    assert_eq!(refused["level"], "WARN");
    assert!(refused["timestamp"].as_str().unwrap().ends_with('Z'));
    find("auth failure: wrong token", "level", "WARN".into());
    find("request", "path", "/health".into());
    find("gateway stopped", "level", "INFO".into());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(t.path("logs/gateway.log"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // `lurkbot logs`: readable lines, --json, -n, --since.
    let out = t.run(&["logs"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains(" WARN request") && l.contains("status=401")),
        "{}",
        out.stdout
    );
    let out = t.run(&["logs", "--json", "-n", "2"]);
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
    let last: serde_json::Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["message"], "gateway stopped");
    let recent = t.run(&["logs", "--since", "1h"]);
    assert_eq!(
        recent.stdout.lines().count(),
        lines.len(),
        "{}",
        recent.stdout
    );
    let future = t.run(&["logs", "--since", "2999-01-01"]);
    assert_eq!(future.status, 0);
    assert_eq!(future.stdout, "");
    let bad = t.run(&["logs", "--since", "yesterday"]);
    assert_eq!(bad.status, 2);
    assert!(bad.stderr.contains("10m"), "{}", bad.stderr);
}

#[test]
fn logs_reads_rotated_files_and_follows_new_lines() {
    let t = Test::init();
    std::fs::create_dir_all(t.path("logs")).unwrap();
    let line = |n: u32| {
        format!(
            "{{\"timestamp\":\"2026-11-24T08:00:{n:02}Z\",\"level\":\"INFO\",\"message\":\"line {n}\",\"target\":\"t\"}}\n"
        )
    };
    std::fs::write(t.path("logs/gateway.log.1"), line(1) + &line(2)).unwrap();
    std::fs::write(t.path("logs/gateway.log"), line(3)).unwrap();
    let out = t.run(&["logs", "-n", "2"]);
    assert_eq!(
        out.stdout,
        "2026-11-24T08:00:02Z  INFO line 2\n2026-11-24T08:00:03Z  INFO line 3\n"
    );
    let out = t.run(&["logs", "--since", "2026-11-24T08:00:02Z"]);
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);

    // -f prints what is appended (read until the line arrives; the child is then killed).
    let mut child = t.command(&["logs", "-f", "-n", "1"], &[]).spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    // A watchdog: if the line never comes, the follower is killed, the read ends at EOF and
    // the test fails instead of hanging.
    let pid = child.id().to_string();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if finished
            .recv_timeout(std::time::Duration::from_secs(30))
            .is_err()
        {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status();
        }
    });
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert!(first.contains("line 3"), "{first}");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(t.path("logs/gateway.log"))
        .unwrap();
    file.write_all(line(4).as_bytes()).unwrap();
    let mut next = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut next).unwrap();
    assert!(next.contains("line 4"), "{next}");
    let _ = done.send(());
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_set_and_sighup_reload_a_running_gateway() {
    use lurkbot_llm::fake::{FakeProvider, Step};
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("Answered after the reload.")]).await;
    let base = format!("{}/v1", fake.url);
    let gw = start_gateway(&t, &[("OPENAI_BASE_URL", &base)]);
    let token = t.gateway_token();
    let env = [("LURKBOT_GATEWAY_TOKEN", token.as_str())];
    let client = Test::init();

    // No model yet: the turn fails and says how to set one.
    let out = client.run_env(&["agent", "--gateway", &gw.ws, "-m", "hi"], &env);
    assert_ne!(out.status, 0);
    // `config set` reloads the running gateway: the next turn uses the new model.
    let set = t.run(&["config", "set", "agent.model", "openai/fake"]);
    assert_eq!(set.status, 0, "{}", set.stderr);
    assert!(
        set.stderr.contains("the running gateway") && set.stderr.contains("reloaded"),
        "{}",
        set.stderr
    );
    let out = client.run_env(&["agent", "--gateway", &gw.ws, "-m", "hi"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Answered after the reload.\n");

    // A key read only at start is named as needing a restart.
    let set = t.run(&["config", "set", "gateway.port", "18790"]);
    assert!(set.stderr.contains("gateway.port"), "{}", set.stderr);
    assert!(set.stderr.contains("restart"), "{}", set.stderr);

    // A broken file on SIGHUP: refused, logged, the gateway keeps running on the old settings.
    let mut text = std::fs::read_to_string(t.path("config.toml")).unwrap();
    text.push_str("\n[agent.typo]\nnope = 1\n");
    std::fs::write(t.path("config.toml"), text).unwrap();
    let pid = gw.child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    // Wait for the refusal to be logged (an event, not a timer): poll the log it writes.
    let log = t.path("logs/gateway.log");
    let refused = (0..500).find_map(|_| {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("config reload refused") {
            return Some(text);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        None
    });
    let refused = refused.expect("the refusal is logged");
    assert!(refused.contains("agent.typo"), "{refused}");
    assert!(get(&gw.addr, "/health", None).starts_with("HTTP/1.1 200"));
    let (status, stderr) = gw.stop();
    assert_eq!(status, 0, "SIGHUP did not kill it: {stderr}");
    assert!(
        !t.path("run/gateway.json").exists(),
        "the address record is removed at stop"
    );
}
