//! `lurkbot chat` with piped input against the scripted provider: turns on one session,
//! `/think`, `/status`, `/new`, an approval answered from the input, and refusals.

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::json;

use crate::util::Test;

const CREATE: &str = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_session_with_commands_and_an_approval() {
    let t = Test::init();
    assert_eq!(
        t.run(&["config", "set", "permissions.calendar", "read-write"])
            .status,
        0
    );
    let fake = FakeProvider::start(vec![
        Step::text("Hi there."),
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::text("Booked."),
        Step::call("c2", "terminal_exec", json!({"command": CREATE})),
        Step::text("Not booked."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake-model"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    let input = "hello\n/think high\n/think bogus\n/status\nbook it\ny\nagain\nmaybe\n/frobnicate\n/new\n/status\n";
    let out = t.run_full(&["chat"], Some(input), &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("Hi there.\n"), "{}", out.stdout);
    assert!(out.stdout.contains("Booked.\n") && out.stdout.contains("Not booked.\n"));
    let status: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("id: "))
        .collect();
    assert_eq!(status.len(), 2);
    assert_ne!(status[0], status[1], "/new starts a new session id");
    assert!(out.stdout.contains("turns: 1\n") && out.stdout.contains("turns: 0\n"));
    assert!(out.stdout.contains("thinking: high"));
    // The context counts what the next request sends: system prompt and tools too (a "hello"
    // turn alone sends about 3,000 tokens), not the history's few words.
    let context: u64 = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("context: about "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(context > 1_000, "{}", out.stdout);
    assert!(
        out.stderr.contains("unknown thinking level 'bogus'"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("unknown command /frobnicate"));
    // The approval: asked, answered from the input; "maybe" is not an answer → denied.
    assert_eq!(
        out.stderr
            .matches("? approval needed for terminal_exec")
            .count(),
        2
    );
    assert!(out.stderr.contains("decision: allow-once"));
    assert!(
        out.stderr.contains("unknown decision 'maybe'") && out.stderr.contains("decision: deny")
    );
    let events =
        t.exec_json("cal list-events --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z");
    assert_eq!(events["result"]["events"].as_array().unwrap().len(), 1);
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[0].body.get("reasoning_effort").is_none());
    assert_eq!(requests[1].body["reasoning_effort"], "high");
    // All turns went to one session until /new.
    let last = requests[4].body["messages"].as_array().unwrap();
    assert!(last.iter().any(|m| m["content"] == "hello"));
}

#[test]
fn chat_without_a_model_says_how_to_configure_one() {
    let t = Test::init();
    let out = t.run_full(&["chat"], Some("hi\n"), &[]);
    assert_eq!(out.status, 2);
    assert!(
        out.stderr.contains("lurkbot chat: no model is configured"),
        "{}",
        out.stderr
    );
    let out = t.run_full(&["chat", "--session", "bad key"], Some(""), &[]);
    assert_ne!(out.status, 0);
}

/// Drives a program on a pseudo-terminal (Python's pty module): waits for each expected text
/// (as an event, with a generous upper bound), then types the next keys.
const PTY_DRIVER: &str = r#"
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = b""
def until(token):
    global seen
    end = time.time() + 30
    while token not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.time()))
        if not ready:
            sys.exit("timed out waiting for %r; the terminal showed %r" % (token, seen))
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            sys.exit("the program ended before %r; it showed %r" % (token, seen))
        seen += chunk
    seen = seen[seen.index(token) + len(token):]
steps = [
    # Type "wrld", go left 3 and insert "o", jump home (Ctrl-A), insert "Hello ".
    (b"> ", b"wrld\x1b[D\x1b[D\x1b[Do\x01Hello \r"),
    # Up arrow recalls the line just sent.
    (b"First reply.", b""),
    (b"> ", b"\x1b[A\r"),
    # A trailing backslash continues the input on a second line.
    (b"Second reply.", b""),
    (b"> ", b"line one\\\rline two\r"),
    (b"Third reply.", b""),
    (b"> ", b"\x04"),
]
for expect, keys in steps:
    until(expect)
    if keys:
        os.write(fd, keys)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_on_a_terminal_edits_lines_and_keeps_history() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::text("First reply."),
        Step::text("Second reply."),
        Step::text("Third reply."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let out = std::process::Command::new("python3")
        .args(["-c", PTY_DRIVER, env!("CARGO_BIN_EXE_lurkbot"), "chat"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", t.dir.path())
        .env("LURKBOT_HOME", &t.home)
        .env("TERM", "xterm-256color")
        .env("LURKBOT_MODEL", "openai/fake-model")
        .env("OPENAI_BASE_URL", &base)
        .output()
        .expect("python3 runs the pty driver");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let sent: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| {
            let last = r.body["messages"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .clone();
            last["content"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(sent, ["Hello world", "Hello world", "line one\nline two"]);
    let history = t.path("history/chat.txt");
    let text = std::fs::read_to_string(&history).unwrap();
    assert!(text.contains("Hello world"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&history).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}
