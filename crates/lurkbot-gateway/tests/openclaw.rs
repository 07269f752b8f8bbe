//! OpenClaw's own clients against a LurkBot gateway (ARCHITECTURE.md §6): OpenClaw's CLI (pinned, from
//! npm, run under Node 24) asks for protocol 4 on `ws://host:port` (path `/`), and its
//! `gateway health|status|probe`, `gateway call`, `health`, `logs` and `agent` work; a wrong
//! token is refused in OpenClaw's words; its TUI completes a turn inside tmux. The frames
//! themselves are checked in `openclaw_wire.rs`.

use std::time::{Duration, Instant};

use lurkbot_llm::fake::Step;
use lurkbot_test_support::openclaw::OpenClaw;
use serde_json::{Value, json};

use crate::common::{Gateway, TOKEN};

/// What one CLI run printed.
struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }
}

/// Runs `openclaw ARGS…` against `gw` (URL and token from the environment, as a user would set
/// them) off the runtime's threads. Its local gateway port is the test's too: `probe` also
/// looks at the local port (18789 by default), and a gateway the machine runs there — the
/// README's own — must not count as a second gateway of the test's.
async fn openclaw(cli: &OpenClaw, gw: &Gateway, args: &[&str]) -> Run {
    let mut command = cli.command(args);
    command
        .env("OPENCLAW_GATEWAY_URL", format!("ws://{}", gw.addr))
        .env("OPENCLAW_GATEWAY_PORT", gw.addr.port().to_string())
        .env("OPENCLAW_GATEWAY_TOKEN", TOKEN);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    Run {
        status: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

async fn call(cli: &OpenClaw, gw: &Gateway, method: &str, params: Value) -> Run {
    openclaw(
        cli,
        gw,
        &[
            "gateway",
            "call",
            method,
            "--json",
            "--params",
            &params.to_string(),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openclaws_cli_reads_health_status_probe_logs_and_each_method() {
    let gw = Gateway::start(
        "[gateway]\ntoken = \"config-secret-0123456789abcdef\"\n",
        vec![],
    )
    .await;
    let cli = OpenClaw::new();

    let health = openclaw(&cli, &gw, &["gateway", "health", "--json"]).await;
    assert_eq!(health.status, 0, "{}", health.stderr);
    assert_eq!(health.json()["ok"], true);
    assert_eq!(health.json()["defaultAgentId"], "main");

    // `gateway status` and `probe` look at the URL and token given, not the environment.
    let url = format!("ws://{}", gw.addr);
    let target = ["--url", url.as_str(), "--token", TOKEN, "--json"];
    let status = openclaw(&cli, &gw, &[&["gateway", "status"][..], &target].concat()).await;
    assert_eq!(status.status, 0, "{}", status.stderr);
    assert_eq!(status.json()["rpc"]["ok"], true, "{}", status.stdout);

    let probe = openclaw(&cli, &gw, &[&["gateway", "probe"][..], &target].concat()).await;
    assert_eq!(probe.status, 0, "{}", probe.stderr);
    let report = probe.json();
    assert_eq!(
        (report["ok"].clone(), report["degraded"].clone()),
        (json!(true), json!(false)),
        "{}",
        probe.stdout
    );

    let summary = openclaw(&cli, &gw, &["health"]).await;
    assert_eq!(summary.status, 0, "{}", summary.stderr);
    assert!(
        summary.stdout.contains("Agents: main (default)"),
        "{}",
        summary.stdout
    );

    // The in-process gateway does not set up the binary's log file: write a line in its format.
    std::fs::create_dir_all(gw.home.join("logs")).unwrap();
    std::fs::write(
        gw.home.join("logs/gateway.log"),
        "{\"timestamp\":\"2026-11-24T08:06:36.689433Z\",\"level\":\"INFO\",\"message\":\"gateway listening\",\"address\":\"127.0.0.1:1\"}\n",
    )
    .unwrap();
    let logs = openclaw(&cli, &gw, &["logs", "--limit", "50"]).await;
    assert_eq!(logs.status, 0, "{}", logs.stderr);
    assert!(
        logs.stdout.contains("gateway.log") && logs.stdout.contains("gateway listening"),
        "{}",
        logs.stdout
    );

    // Each implemented method through `gateway call`, with OpenClaw's payload shapes.
    for (method, params, field) in [
        ("health", json!({}), "agents"),
        ("status", json!({}), "version"),
        ("config.get", json!({}), "config"),
        ("logs.tail", json!({"limit": 5}), "lines"),
        ("sessions.list", json!({"limit": 10}), "sessions"),
        ("agents.list", json!({}), "agents"),
        ("models.list", json!({}), "models"),
        ("commands.list", json!({}), "commands"),
        ("skills.status", json!({}), "skills"),
        ("exec.approval.list", json!({}), "approvals"),
        ("question.list", json!({}), "questions"),
        ("taskSuggestions.list", json!({}), "suggestions"),
        ("cron.list", json!({}), "jobs"),
        ("cron.status", json!({}), "jobs"),
        ("usage.summary", json!({}), "total"),
        ("terminal.exec", json!({"command": "help"}), "exit_code"),
        ("sessions.subscribe", json!({"limit": 5}), "subscribed"),
    ] {
        let run = call(&cli, &gw, method, params).await;
        assert_eq!(run.status, 0, "{method}: {}{}", run.stdout, run.stderr);
        assert!(
            run.json().get(field).is_some(),
            "{method} lacks {field}: {}",
            run.stdout
        );
    }
    // OpenClaw's own `cron add` and `cron list`, then the rest of cron.* through `gateway call`.
    let added = openclaw(
        &cli,
        &gw,
        &[
            &[
                "cron",
                "add",
                "--name",
                "Morning brief",
                "--every",
                "1h",
                "--message",
                "Summarise the news",
            ][..],
            &target[..4],
        ]
        .concat(),
    )
    .await;
    assert_eq!(added.status, 0, "{}{}", added.stdout, added.stderr);
    let listed = openclaw(&cli, &gw, &[&["cron", "list"][..], &target[..4]].concat()).await;
    assert!(listed.stdout.contains("Morning brief"), "{}", listed.stdout);
    let jobs = call(&cli, &gw, "cron.list", json!({})).await.json();
    let job_id = jobs["jobs"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(jobs["jobs"][0]["schedule"]["everyMs"], 3_600_000);
    for (method, params, field, value) in [
        ("cron.runs", json!({"jobId": job_id}), "runs", json!([])),
        (
            "cron.run",
            json!({"jobId": job_id, "mode": "due"}),
            "ran",
            json!(false),
        ),
        (
            "cron.update",
            json!({"jobId": job_id, "patch": {"enabled": false}}),
            "job",
            Value::Null,
        ),
        (
            "cron.remove",
            json!({"jobId": job_id}),
            "removed",
            json!(job_id),
        ),
    ] {
        let run = call(&cli, &gw, method, params).await;
        assert_eq!(run.status, 0, "{method}: {}{}", run.stdout, run.stderr);
        if !value.is_null() {
            assert_eq!(run.json()[field], value, "{method}: {}", run.stdout);
        }
    }
    let presence = call(&cli, &gw, "system-presence", json!({})).await;
    assert_eq!(presence.json()[0]["mode"], "gateway", "{}", presence.stdout);
    // Secrets are masked in config.get.
    let config = call(&cli, &gw, "config.get", json!({})).await;
    assert!(
        !config.stdout.contains("config-secret-0123456789abcdef"),
        "{}",
        config.stdout
    );
    assert_eq!(config.json()["config"]["gateway"]["token"], "********");

    // A method LurkBot does not implement: OpenClaw's error, which its clients recognise.
    let unknown = call(&cli, &gw, "tts.status", json!({})).await;
    assert_ne!(unknown.status, 0);
    let text = format!("{}{}", unknown.stdout, unknown.stderr);
    assert!(
        text.contains("INVALID_REQUEST") && text.contains("unknown method: tts.status"),
        "{text}"
    );

    // A wrong token is refused in OpenClaw's words, and nothing is answered.
    let mut wrong = cli.command(&[
        "gateway",
        "health",
        "--url",
        &format!("ws://{}", gw.addr),
        "--token",
        "not-the-token-0123456789",
    ]);
    let output = tokio::task::spawn_blocking(move || wrong.output().unwrap())
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("unauthorized: gateway token mismatch"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openclaws_agent_command_prints_the_reply_of_a_tool_turn() {
    let gw = Gateway::start(
        "",
        vec![
            Step::calls(&[(
                "call_1",
                "terminal_exec",
                json!({"command": "echo saw-result"}),
            )]),
            Step::text("DONE: saw-result"),
        ],
    )
    .await;
    let cli = OpenClaw::new();
    let run = openclaw(
        &cli,
        &gw,
        &[
            "agent",
            "--message",
            "Run echo and tell me",
            "--session-key",
            "agent:main:main",
            "--json",
        ],
    )
    .await;
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("DONE: saw-result"), "{}", run.stdout);
    // The tool ran for real: its result went back to the model.
    let requests = gw.fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body.to_string().contains("saw-result"),
        "{}",
        requests[1].body
    );

    // The session is there for OpenClaw's session and chat readers.
    let history = call(
        &cli,
        &gw,
        "chat.history",
        json!({"sessionKey": "agent:main:main"}),
    )
    .await;
    let messages = history.json()["messages"].clone();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(messages[1]["content"][0]["type"], "toolCall");
    let describe = call(
        &cli,
        &gw,
        "sessions.describe",
        json!({"key": "agent:main:main"}),
    )
    .await;
    assert_eq!(
        describe.json()["session"]["isMain"],
        true,
        "{}",
        describe.stdout
    );
    assert!(describe.json()["session"]["totalTokens"].as_u64().is_some());

    // The rest of the turn and session methods through `gateway call`.
    let run_id = run_id_of(&run.stdout);
    let waited = call(
        &cli,
        &gw,
        "agent.wait",
        json!({"runId": run_id, "timeoutMs": 1000}),
    )
    .await;
    assert_eq!(waited.json()["status"], "ok", "{}", waited.stdout);
    let same = call(
        &cli,
        &gw,
        "sessions.history",
        json!({"sessionKey": "agent:main:main"}),
    )
    .await;
    assert_eq!(same.json()["messages"], messages);
    let abort = call(
        &cli,
        &gw,
        "chat.abort",
        json!({"sessionKey": "agent:main:main"}),
    )
    .await;
    assert_eq!(
        abort.json()["aborted"],
        false,
        "nothing runs: {}",
        abort.stdout
    );
    let reset = call(
        &cli,
        &gw,
        "sessions.reset",
        json!({"key": "agent:main:main"}),
    )
    .await;
    assert_eq!(reset.json()["ok"], true, "{}", reset.stdout);
    let empty = call(
        &cli,
        &gw,
        "chat.history",
        json!({"sessionKey": "agent:main:main"}),
    )
    .await;
    assert_eq!(empty.json()["messages"], json!([]), "{}", empty.stdout);
    let deleted = call(
        &cli,
        &gw,
        "sessions.delete",
        json!({"key": "agent:main:main"}),
    )
    .await;
    assert_eq!(deleted.json()["deleted"], true, "{}", deleted.stdout);
    let gone = call(
        &cli,
        &gw,
        "sessions.describe",
        json!({"key": "agent:main:main"}),
    )
    .await;
    assert_ne!(gone.status, 0, "{}", gone.stdout);
}

/// The run id in `openclaw agent --json`'s output.
fn run_id_of(stdout: &str) -> String {
    let start = stdout.find('{').unwrap_or(0);
    let value: Value = serde_json::from_str(&stdout[start..])
        .unwrap_or_else(|e| panic!("agent --json printed no JSON ({e}): {stdout}"));
    value["runId"]
        .as_str()
        .unwrap_or_else(|| panic!("no runId: {stdout}"))
        .to_string()
}

/// Reads the tmux pane until `needle` shows, for at most `limit`.
fn wait_for_pane(session: &str, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let out = std::process::Command::new("tmux")
            .args(["capture-pane", "-p", "-t", session])
            .output()
            .unwrap();
        let pane = String::from_utf8_lossy(&out.stdout).into_owned();
        if pane.contains(needle) || Instant::now() > deadline {
            return pane;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openclaws_tui_completes_a_turn_inside_tmux() {
    let gw = Gateway::start("", vec![Step::text("Hello from LurkBot's gateway")]).await;
    let cli = OpenClaw::new();
    let session = format!("lurkbot-tui-{}", std::process::id());
    let command = cli.command(&[
        "tui",
        "--url",
        &format!("ws://{}", gw.addr),
        "--token",
        TOKEN,
    ]);
    // tmux runs the command through its own shell; pass the environment and argv explicitly.
    let env: Vec<String> = command
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_str()?, v?.to_str()?)))
        .collect();
    let mut argv = vec!["env".to_string()];
    argv.extend(env);
    argv.push(command.get_program().to_string_lossy().into_owned());
    argv.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    let started = std::process::Command::new("tmux")
        .args(["new-session", "-d", "-s", &session, "-x", "160", "-y", "50"])
        .args(&argv)
        .status()
        .unwrap();
    assert!(started.success());
    let name = session.clone();
    let pane = tokio::task::spawn_blocking(move || {
        let ready = wait_for_pane(&name, "connected", Duration::from_secs(60));
        std::process::Command::new("tmux")
            .args(["send-keys", "-t", &name, "say hello", "Enter"])
            .status()
            .unwrap();
        let pane = wait_for_pane(&name, "Hello from LurkBot", Duration::from_secs(60));
        (ready, pane)
    })
    .await
    .unwrap();
    let _ = std::process::Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .status();
    assert!(
        pane.1.contains("Hello from LurkBot's gateway"),
        "ready pane:\n{}\nafter the turn:\n{}",
        pane.0,
        pane.1
    );
    assert_eq!(gw.fake.requests().len(), 1);
    assert!(
        gw.fake.requests()[0].body.to_string().contains("say hello"),
        "the TUI's message reached the model"
    );
}
