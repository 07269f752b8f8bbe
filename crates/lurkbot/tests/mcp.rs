//! MCP both ways against the official Python SDK (`mcp` in the test venv): servers written on it
//! (tests/mcp/*.py) behind `[mcp.servers]` — listed, called in a turn through the policy, denied
//! by pattern, crashing mid-call, hanging, never answering, over streamable HTTP — and the SDK's
//! client driving `lurkbot mcp serve`.

use std::path::PathBuf;

use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_test_support::venv::test_python;
use serde_json::{Value, json};

use crate::util::Test;

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
        .display()
        .to_string()
}

/// `[mcp.servers.<name>]` for a stdio server run by the venv's Python.
fn stdio_server(name: &str, file: &str, extra: &str) -> String {
    format!(
        "\n[mcp.servers.{name}]\ncommand = [\"{}\", \"{}\"]\n{extra}",
        test_python().display(),
        script(file)
    )
}

fn append_config(t: &Test, text: &str) {
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(t.path("config.toml"), format!("{config}{text}")).unwrap();
}

/// Adds `line` at the top of the `[section]` that `init` wrote.
fn set_in_section(t: &Test, section: &str, line: &str) {
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let header = format!("[{section}]\n");
    assert!(config.contains(&header), "no [{section}] in config.toml");
    std::fs::write(
        t.path("config.toml"),
        config.replacen(&header, &format!("{header}{line}\n"), 1),
    )
    .unwrap();
}

/// The tool results the model was sent in request `n`, in order.
fn tool_results(fake: &FakeProvider, n: usize) -> Vec<String> {
    fake.requests()[n].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_server_speaking_an_unknown_protocol_version_is_refused() {
    let t = Test::init();
    append_config(&t, &stdio_server("future", "future_server.py", ""));
    let out = t.run(&["mcp", "list", "--json"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let list = out.json();
    let future = &list[0];
    assert_eq!(future["name"], "future");
    assert_eq!(future["state"], "failed", "{future}");
    let error = future["error"].as_str().unwrap();
    assert!(
        error.contains("speaks MCP protocol '2099-01-01'") && error.contains("2025-06-18"),
        "{error}"
    );
    assert!(
        future["tools"].as_array().is_none_or(Vec::is_empty),
        "{future}"
    );
}

#[test]
fn mcp_list_shows_ready_failed_and_disabled_servers_with_their_tools() {
    let t = Test::init();
    append_config(
        &t,
        &format!(
            "{}{}{}\n[mcp.servers.missing]\ncommand = [\"/nonexistent/mcp-server\"]\n",
            stdio_server("calc", "calc_server.py", ""),
            stdio_server(
                "silent",
                "silent_server.py",
                "startup_timeout_seconds = 2\n"
            ),
            stdio_server("off", "calc_server.py", "enabled = false\n"),
        ),
    );
    let out = t.run(&["mcp", "list", "--json"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let list = out.json();
    let server = |name: &str| -> Value {
        list.as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap()
    };
    let calc = server("calc");
    assert_eq!(calc["state"], "ready", "{calc}");
    assert_eq!(calc["transport"], "stdio");
    let tools: Vec<&str> = calc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in ["calc__add", "calc__crash", "calc__hang", "calc__env"] {
        assert!(tools.contains(&tool), "{tools:?}");
    }
    let missing = server("missing");
    assert_eq!(missing["state"], "failed");
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("cannot start '/nonexistent/mcp-server'"),
        "{missing}"
    );
    let silent = server("silent");
    assert_eq!(silent["state"], "failed");
    assert!(
        silent["error"].as_str().unwrap().contains("within 2 s"),
        "{silent}"
    );
    assert_eq!(server("off")["state"], "disabled");
    // The text form says the same.
    let out = t.run(&["mcp", "list"]);
    assert!(out.stdout.contains("calc (stdio): ready"), "{}", out.stdout);
    assert!(
        out.stdout.contains("  calc__add  Add two integers."),
        "{}",
        out.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_calls_mcp_tools_under_the_policy_and_survives_a_crash_and_a_hang() {
    let t = Test::init();
    std::fs::write(t.path(".env"), "CALC_TOKEN=tok-7d1e93\n").unwrap();
    set_in_section(&t, "tools", "deny = [\"calc__h*\"]");
    append_config(
        &t,
        &format!(
            "{}{}",
            stdio_server(
                "calc",
                "calc_server.py",
                "env = { CALC_TOKEN = \"${CALC_TOKEN}\" }\n"
            ),
            stdio_server("slow", "calc_server.py", "timeout_seconds = 1\n"),
        ),
    );
    let fake = FakeProvider::start(vec![
        Step::calls(&[
            ("c1", "calc__add", json!({"a": 2, "b": 3})),
            ("c2", "calc__env", json!({})),
            ("c3", "calc__hang", json!({})),
        ]),
        Step::calls(&[
            ("c4", "calc__crash", json!({})),
            ("c5", "calc__add", json!({"a": 40, "b": 2})),
        ]),
        Step::calls(&[
            ("c6", "slow__hang", json!({})),
            ("c7", "slow__add", json!({"a": 1, "b": 1})),
        ]),
        Step::text("Done."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake-model"),
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-parent-only"),
    ];
    let out = t.run_env(&["agent", "-m", "Use the calculator."], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);

    // Offered: the servers' tools as <server>__<tool>, except those the policy denies.
    let offered = fake.requests()[0].body["tools"].to_string();
    assert!(
        offered.contains("calc__add") && offered.contains("slow__hang"),
        "{offered}"
    );
    assert!(
        !offered.contains("calc__hang"),
        "denied by pattern: {offered}"
    );

    let first = tool_results(&fake, 1);
    assert!(
        first[0].contains('5') && first[0].contains("untrusted"),
        "{}",
        first[0]
    );
    // The token came from the home's .env and was redacted on its way back; the parent's key
    // never reached the server's environment.
    assert!(
        first[1].contains("openai_key_visible=False"),
        "{}",
        first[1]
    );
    assert!(!first[1].contains("tok-7d1e93"), "{}", first[1]);
    assert!(
        first[2].contains("not available in this session"),
        "{}",
        first[2]
    );

    // A crash mid-call is a tool error naming it; the next call starts the server again.
    let second = tool_results(&fake, 2);
    assert!(
        second[3].contains("failed during the call"),
        "{}",
        second[3]
    );
    assert!(second[4].contains("42"), "restarted: {}", second[4]);

    // A hang ends at the server's timeout; the next call starts it again.
    let third = tool_results(&fake, 3);
    assert!(
        third[5].contains("did not answer within 1 s"),
        "{}",
        third[5]
    );
    assert!(third[6].contains('2'), "restarted: {}", third[6]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_serves_its_tools() {
    let port = lurkbot_test_support::ports::free_port();
    let mut server = std::process::Command::new(test_python())
        .args([script("calc_server.py"), "--http".into(), port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Ready when it accepts a connection (bounded: 30 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the HTTP MCP server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let t = Test::init();
    append_config(
        &t,
        &format!("\n[mcp.servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"),
    );
    let fake = FakeProvider::start(vec![
        Step::calls(&[("c1", "web__add", json!({"a": 20, "b": 22}))]),
        Step::text("42."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake-model"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    let list = t.run(&["mcp", "list", "--json"]).json();
    assert_eq!(list[0]["transport"], "http");
    assert_eq!(list[0]["state"], "ready", "{list}");
    let out = t.run_env(&["agent", "-m", "Add."], &env);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(tool_results(&fake, 1)[0].contains("42"));
}

/// Runs the SDK's client against `lurkbot mcp serve` on `t`'s home.
fn serve_client(t: &Test, calls: Value) -> Value {
    let out = lurkbot_test_support::venv::run_python([
        script("serve_client.py").into(),
        env!("CARGO_BIN_EXE_lurkbot").into(),
        t.home.clone().into_os_string(),
        calls.to_string().into(),
    ]);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn the_sdk_client_drives_lurkbot_mcp_serve_under_policy_approvals_and_audit() {
    let t = Test::init();
    std::fs::write(t.path("workspace/notes.txt"), "line one\nline two\n").unwrap();
    set_in_section(&t, "approvals", "commands = [\"rss\"]");
    let seen = serve_client(
        &t,
        json!([
            ["terminal_exec", {"command": "help"}],
            ["read", {"path": "workspace/notes.txt"}],
            ["read", {"path": "config.toml"}],
            ["terminal_exec", {"command": "rss list"}],
            ["write", {"path": "workspace/x.txt", "content": "no"}],
        ]),
    );
    assert_eq!(seen["server"], "lurkbot");
    assert_eq!(seen["tools"], json!(["terminal_exec", "read"]));
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results[0]["isError"], false, "{results:?}");
    assert!(
        results[0]["text"].as_str().unwrap().contains("zip"),
        "{results:?}"
    );
    assert!(results[1]["text"].as_str().unwrap().contains("line two"));
    assert!(results[1]["text"].as_str().unwrap().contains("untrusted"));
    assert_eq!(
        results[2]["isError"], true,
        "config.toml is protected: {results:?}"
    );
    assert_eq!(results[3]["isError"], true);
    assert!(
        results[3]["text"]
            .as_str()
            .unwrap()
            .contains("A human must allow it in LurkBot"),
        "{results:?}"
    );
    assert_eq!(results[4]["isError"], true);
    assert!(
        results[4]["text"]
            .as_str()
            .unwrap()
            .contains("not available")
    );
    // Audited like every terminal_exec run, under the MCP session.
    let audit = t.audit_text();
    assert!(audit.contains("agent:main:dm:mcp:client"), "{audit}");
    assert!(
        !audit.contains("rss list"),
        "the refused call never ran: {audit}"
    );

    // The policy narrows what is served.
    set_in_section(&t, "tools", "deny = [\"read\"]");
    let seen = serve_client(&t, json!([["read", {"path": "workspace/notes.txt"}]]));
    assert_eq!(seen["tools"], json!(["terminal_exec"]));
    assert_eq!(seen["results"][0]["isError"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_wait_for_approvals_like_every_tool() {
    let t = Test::init();
    set_in_section(&t, "approvals", "tools = [\"calc__add\"]");
    append_config(&t, &stdio_server("calc", "calc_server.py", ""));
    let fake = FakeProvider::start(vec![
        Step::calls(&[("c1", "calc__add", json!({"a": 1, "b": 2}))]),
        Step::text("It was not allowed."),
    ])
    .await;
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake-model"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    // No terminal to ask on: the call is denied, never run.
    let out = t.run_env(&["agent", "-m", "Add."], &env);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let result = &tool_results(&fake, 1)[0];
    assert!(result.contains("denied"), "{result}");
    assert!(!result.contains('3'), "{result}");
}
