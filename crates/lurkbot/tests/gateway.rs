//! `lurkbot gateway` as a user runs it: one log line with the URL (no token in it when stdout
//! is not a terminal), `/health` at once, a clean stop on SIGTERM, and the refusals at start.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use crate::util::{Test, start_gateway as start};

#[test]
fn starts_logs_one_line_and_stops_on_sigterm() {
    let t = Test::init();
    let token = t.gateway_token();
    assert!(token.len() >= 32);
    let started = Instant::now();
    let mut child = t.command(&["gateway", "--port", "0"], &[]).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        line.starts_with("lurkbot gateway listening on http://127.0.0.1:"),
        "{line}"
    );
    assert!(
        !line.contains(&token),
        "the token never reaches a log: {line}"
    );
    assert!(
        line.contains("token: gateway.token in config.toml"),
        "{line}"
    );
    let url = line.split_whitespace().nth(4).unwrap().to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    use std::io::{Read, Write};
    write!(
        stream,
        "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"ok\":true"));
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped"));
}

/// SIGTERM the moment the address line is read stops the gateway cleanly (exit 0): the
/// handler is installed before that line is printed (it was installed when the gateway first
/// waited for connections, so an early SIGTERM killed it: seen once in CI).
#[test]
fn a_sigterm_right_after_the_address_line_stops_cleanly() {
    let t = Test::init();
    for _ in 0..3 {
        let gw = start(&t, &[]);
        let (status, stderr) = gw.stop();
        assert_eq!(status, 0, "{stderr}");
        assert!(stderr.contains("gateway stopped"), "{stderr}");
    }
}

#[test]
fn unsafe_or_incomplete_settings_refuse_to_start() {
    let t = Test::init();
    // auth = none on a public bind.
    assert_eq!(t.run(&["config", "set", "gateway.auth", "none"]).status, 0);
    let out = t.run(&["gateway", "--bind", "0.0.0.0", "--port", "0"]);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(out.stderr.contains("loopback"), "{}", out.stderr);
    let out = t.run(&["gateway", "--bind", "not-an-ip", "--port", "0"]);
    assert_eq!(out.status, 2);
    // No token at all with auth = token.
    let bare = Test::new();
    std::fs::create_dir_all(bare.path("")).unwrap();
    let out = bare.run(&["gateway", "--port", "0"]);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(out.stderr.contains("lurkbot init"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_and_agent_run_inside_the_gateway() {
    use lurkbot_llm::fake::{FakeProvider, Step};
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::call(
            "c1",
            "terminal_exec",
            serde_json::json!({"command": "help"}),
        ),
        Step::text("Remote answer."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let gw = start(
        &t,
        &[("LURKBOT_MODEL", "openai/fake"), ("OPENAI_BASE_URL", &base)],
    );

    let client = Test::init();
    let token = t.gateway_token();
    let env = [("LURKBOT_GATEWAY_TOKEN", token.as_str())];
    let out = client.run_env(&["exec", "--gateway", &gw.ws, "help"], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(out.stdout.contains("zip"));
    // The http:// address the gateway prints works as well, and ws:// without /ws.
    let printed = gw
        .ws
        .replace("ws://", "http://")
        .trim_end_matches("ws")
        .to_string();
    let bare = gw.ws.trim_end_matches("/ws").to_string();
    for url in [&printed, &bare] {
        let out = client.run_env(&["exec", "--gateway", url, "help"], &env);
        assert_eq!(out.status, 0, "{url}: {}", out.stderr);
    }
    let out = client.run_env(&["exec", "--json", "--gateway", &gw.ws, "nosuch"], &env);
    assert_eq!(out.status, 127);
    assert_eq!(out.json()["error_code"], "UnknownCommand");
    // The audit record is written by the gateway's home, not the client's.
    assert!(t.audit_text().contains("nosuch"));
    assert!(!client.audit_text().contains("nosuch"));
    // LURKBOT_GATEWAY_URL works as the flag does; a wrong token is refused.
    let out = client.run_env(
        &["exec", "help"],
        &[
            ("LURKBOT_GATEWAY_URL", gw.ws.as_str()),
            ("LURKBOT_GATEWAY_TOKEN", "wrong"),
        ],
    );
    assert_eq!(out.status, 1);
    assert!(out.stderr.contains("UNAUTHORIZED"), "{}", out.stderr);

    let out = client.run_env(
        &["agent", "--gateway", &gw.ws, "-m", "what can you do?"],
        &env,
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Remote answer.\n");
    assert!(out.stderr.contains("→ terminal_exec"), "{}", out.stderr);
    let history = t.run(&["sessions", "history"]).stdout;
    assert!(
        history.contains("Remote answer."),
        "the gateway's home holds the turn: {history}"
    );
    let out = client.run_env(
        &[
            "agent",
            "--gateway",
            &gw.ws,
            "--model",
            "openai/x",
            "-m",
            "x",
        ],
        &env,
    );
    assert_eq!(out.status, 2);
}

/// A gateway with no model configured: `agent --gateway` exits 2 (nothing configured), as
/// the in-process `agent` does, with the fix in its message.
#[test]
fn agent_through_a_gateway_without_a_model_exits_2() {
    let t = Test::init();
    let gw = start(&t, &[]);
    let token = t.gateway_token();
    let out = t.run_env(
        &["agent", "--gateway", &gw.ws, "-m", "hello"],
        &[("LURKBOT_GATEWAY_TOKEN", token.as_str())],
    );
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(out.stderr.contains("LURKBOT_MODEL"), "{}", out.stderr);
}

#[test]
fn the_start_line_names_where_the_token_came_from() {
    let t = Test::init();
    let env_token = "env-token-0123456789abcdefghij";
    let mut child = t
        .command(
            &["gateway", "--port", "0"],
            &[("LURKBOT_GATEWAY_TOKEN", env_token)],
        )
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.contains("token: LURKBOT_GATEWAY_TOKEN from the environment"),
        "{line}"
    );
    assert!(!line.contains(env_token), "{line}");
}

/// The gateway never blocks on its own output (ARCHITECTURE.md §9): with stdout and stderr
/// piped and never read, debug logging and far more than a pipe's 64 KiB of log lines, every
/// request is still answered; the lines that did not fit are dropped, counted, and kept in the
/// log file.
#[test]
fn a_stderr_nobody_reads_never_stops_the_gateway() {
    use std::io::{Read, Write};
    let t = Test::init();
    let port = lurkbot_test_support::ports::free_port();
    let mut child = t
        .command(
            &["gateway", "--port", &port.to_string()],
            &[("LURKBOT_LOG", "debug")],
        )
        .spawn()
        .unwrap();
    lurkbot_test_support::ports::wait_port(port, "the gateway");
    let token = t.gateway_token();
    let get = |path: &str| -> String {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    };
    let log = t.path("logs/gateway.log");
    let mut requests = 0;
    // Until the log holds several pipes' worth of lines (all of them also went to stderr).
    while std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) < 512 * 1024 {
        let answer = get("/v1/models");
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "request {requests}: {answer:?}"
        );
        requests += 1;
        assert!(
            requests < 50_000,
            "the gateway does not log enough to fill a pipe"
        );
    }
    let health = get("/health");
    assert!(
        health.starts_with("HTTP/1.1 200"),
        "after {requests} requests: {health:?}"
    );
    // Someone reads stderr again: the lines that did not fit are counted there.
    let (seen, _reader) = crate::util::drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.lock().unwrap().contains("log line(s) dropped") {
        assert!(Instant::now() < deadline, "no count of the dropped lines");
        get("/health");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// SIGTERM (what `systemctl restart` and a deploy send) while a model call is in flight: the
/// running turn finishes and its client gets the answer, then the gateway exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_turn_lets_its_client_have_the_answer() {
    use lurkbot_llm::fake::{FakeProvider, Gate, Step};
    let t = Test::init();
    let gate = Gate::new();
    let fake = FakeProvider::start(vec![Step::Held(
        gate.clone(),
        Box::new(Step::text("Answered through the restart.")),
    )])
    .await;
    fake.record(true);
    let base = format!("{}/v1", fake.url);
    let gw = start(
        &t,
        &[("LURKBOT_MODEL", "openai/fake"), ("OPENAI_BASE_URL", &base)],
    );
    let client = Test::init();
    let token = t.gateway_token();
    let ws = gw.ws.clone();
    let asking = std::thread::spawn(move || {
        client.run_env(
            &["agent", "--gateway", &ws, "-m", "a long question"],
            &[("LURKBOT_GATEWAY_TOKEN", token.as_str())],
        )
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.requests().is_empty() {
        assert!(Instant::now() < deadline, "no model call");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &gw.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // The gateway drains instead of going: it says so, and the held call is still open.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gw.stderr().contains("running turns may finish") {
        assert!(
            Instant::now() < deadline,
            "the gateway did not drain: {}",
            gw.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gate.open();
    let answered = tokio::task::spawn_blocking(move || asking.join().unwrap())
        .await
        .unwrap();
    assert_eq!(answered.status, 0, "{}", answered.stderr);
    assert_eq!(answered.stdout, "Answered through the restart.\n");
    // The first SIGTERM is enough: drained, it exits by itself (a second one would be a
    // second stop, racing the drain's last look).
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.exited())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("every running turn finished"), "{stderr}");
}
