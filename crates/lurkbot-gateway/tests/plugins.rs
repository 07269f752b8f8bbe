//! Plugins from the outside (ARCHITECTURE.md §7d): a plugin written here in a few lines of
//! Python (standard library only, not the shipped examples' code) speaks protocol 1 with a
//! gateway — `initialize` with its settings and only the `.env` names it lists, a banner on
//! stdout that is not protocol (ignored), a channel whose messages are answered `{recorded}`
//! once recorded (a redelivered id `{recorded: false}`, never answered twice), a stranger
//! paired with the model never called, a `before_tool` hook whose refusal the model reads as
//! the tool's error; killed, it is started again and answers the next message; stopped with
//! `shutdown` at the gateway's stop. A plugin that exits at once is restarted with a back-off
//! and says why in its status.

use std::path::Path;
use std::time::{Duration, Instant};

use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};

const WAIT: Duration = Duration::from_secs(30);

pub(crate) const MANIFEST: &str = r#"name = "echo"
version = "0.1.0"
description = "a test channel"
command = ["python3", "main.py"]
provides = ["channel:echo", "hook:before_tool"]
env = ["ECHO_TOKEN"]
"#;

/// The plugin: messages to deliver are files in `inbox/`; what it is sent and answered is
/// logged in JSON-lines files beside it.
pub(crate) const PLUGIN: &str = r#"import json, os, sys, threading, time
lock = threading.Lock()
def send(m):
    with lock:
        sys.stdout.write(json.dumps(m) + "\n")
        sys.stdout.flush()
def log(name, m):
    with open(name, "a") as f:
        f.write(json.dumps(m) + "\n")
asked = {}
def deliver():
    n = 1000
    while True:
        for name in sorted(os.listdir("inbox")):
            path = os.path.join("inbox", name)
            with open(path) as f:
                params = json.load(f)
            os.remove(path)
            n += 1
            asked[n] = params["id"]
            send({"jsonrpc": "2.0", "id": n, "method": "channel.receive", "params": params})
        time.sleep(0.02)
print("a banner that is not protocol", flush=True)
os.makedirs("inbox", exist_ok=True)
log("starts.jsonl", {"pid": os.getpid(), "env": sorted(os.environ)})
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "initialize":
        log("init.jsonl", m["params"])
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"provides": ["channel:echo", "hook:before_tool"]}})
    elif method == "initialized":
        send({"jsonrpc": "2.0", "method": "channel.status", "params": {"channel": "echo", "state": "connected"}})
        threading.Thread(target=deliver, daemon=True).start()
    elif method == "channel.send":
        log("sent.jsonl", m["params"])
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"id": "p-" + m["params"]["key"]}})
    elif method == "hook.before_tool":
        log("hooks.jsonl", m["params"])
        allow = m["params"]["tool"] != "terminal_exec"
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"allow": allow, "reason": "no terminal at night"}})
    elif method == "shutdown":
        log("stops.jsonl", {})
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
    elif method is None:
        log("answers.jsonl", {"message": asked.get(m.get("id")), "result": m.get("result"), "error": m.get("error")})
"#;

/// The person writes: a message file the plugin delivers.
fn writes(dir: &Path, id: &str, sender: &str, text: &str) {
    delivers(
        dir,
        &json!({"channel": "echo", "id": id, "chat": sender, "sender": sender, "text": text}),
    );
}

/// The plugin delivers `params` as a `channel.receive` (files taken in the order written).
pub(crate) fn delivers(dir: &Path, params: &Value) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let inbox = dir.join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let tmp = inbox.join(format!(".{n}.tmp"));
    std::fs::write(&tmp, params.to_string()).unwrap();
    let name = format!("{}-{n:06}.json", lurkbot_core::now_ms());
    std::fs::rename(tmp, inbox.join(name)).unwrap();
}

/// The JSON lines of `file` once it has `n` (at most [`WAIT`]).
pub(crate) async fn lines(dir: &Path, file: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let all: Vec<Value> = std::fs::read_to_string(dir.join(file))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if all.len() >= n || Instant::now() > deadline {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The plugin's status from `plugins.status` once `done` holds (at most [`WAIT`]).
async fn status_when(gw: &Gateway, done: impl Fn(&Value) -> bool) -> Value {
    let (mut c, _) = Client::connect(gw, TOKEN).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = c.request("plugins.status", json!({})).await["payload"].clone();
        let plugin = answer["plugins"][0].clone();
        if done(&plugin) {
            return plugin;
        }
        assert!(Instant::now() < deadline, "never: {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn echo_gateway(steps: Vec<Step>) -> Gateway {
    Gateway::start_with_files(
        "[plugins.echo]\nenabled = true\ngreeting = \"hi\"\n[channels.echo]\nallow_from = [\"owner\"]\n",
        steps,
        &[
            ("plugins/echo/lurkbot-plugin.toml", MANIFEST.into()),
            ("plugins/echo/main.py", PLUGIN.into()),
            (".env", "ECHO_TOKEN=tok-echo-123\nOTHER_SECRET=never-handed\n".into()),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_channel_is_answered_once_pairs_strangers_and_its_hook_refuses_a_tool() {
    let gw = echo_gateway(vec![
        Step::text("Hi from the model."),
        Step::call("c1", "terminal_exec", json!({"command": "help"})),
        Step::text("Refused, sorry."),
    ])
    .await;
    let dir = gw.home.join("plugins/echo");
    let running = status_when(&gw, |p| p["state"] == "running").await;
    assert_eq!(
        running["provides"],
        json!(["channel:echo", "hook:before_tool"])
    );
    // Its settings, and only the `.env` names it lists.
    let init = lines(&dir, "init.jsonl", 1).await;
    assert_eq!(
        init[0],
        json!({"protocol": 1, "name": "echo", "config": {"greeting": "hi"}})
    );
    let env = lines(&dir, "starts.jsonl", 1).await[0]["env"].to_string();
    assert!(
        env.contains("ECHO_TOKEN")
            && !env.contains("OTHER_SECRET")
            && !env.contains("OPENAI_BASE_URL"),
        "{env}"
    );

    writes(&dir, "m1", "owner", "hello");
    let sent = lines(&dir, "sent.jsonl", 1).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["chat"], "owner");
    assert_eq!(sent[0]["text"], "Hi from the model.");
    assert!(
        sent[0]["key"].as_str().is_some_and(|k| !k.is_empty()),
        "{sent:?}"
    );
    let answers = lines(&dir, "answers.jsonl", 1).await;
    assert_eq!(
        answers[0],
        json!({"message": "m1", "result": {"recorded": true}, "error": null})
    );

    // Served again: recorded before, not answered twice.
    writes(&dir, "m1", "owner", "hello");
    let answers = lines(&dir, "answers.jsonl", 2).await;
    assert_eq!(
        answers[1],
        json!({"message": "m1", "result": {"recorded": false}, "error": null})
    );

    // A stranger gets a pairing code; the model is not called.
    writes(&dir, "m2", "eve", "who are you?");
    let sent = lines(&dir, "sent.jsonl", 2).await;
    assert_eq!(sent[1]["chat"], "eve");
    assert!(
        sent[1]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("pairing code"),
        "{sent:?}"
    );
    assert_eq!(
        gw.fake.requests().len(),
        1,
        "a stranger or a redelivery reached the model"
    );

    // The hook refuses terminal_exec: the model reads why, as the tool's error.
    writes(&dir, "m3", "owner", "run help");
    let sent = lines(&dir, "sent.jsonl", 3).await;
    assert_eq!(sent[2]["text"], "Refused, sorry.", "{sent:?}");
    let hooks = lines(&dir, "hooks.jsonl", 1).await;
    assert_eq!(hooks[0]["tool"], "terminal_exec");
    assert_eq!(hooks[0]["args"], json!({"command": "help"}));
    let requests = gw.fake.requests();
    assert_eq!(requests.len(), 3);
    let seen = requests[2].body["messages"].to_string();
    assert!(
        seen.contains("refused by a plugin's policy") && seen.contains("no terminal at night"),
        "{seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_plugin_is_started_again_and_answers_the_next_message() {
    let gw = echo_gateway(vec![Step::text("Still here.")]).await;
    let dir = gw.home.join("plugins/echo");
    let first = status_when(&gw, |p| p["state"] == "running").await;
    let pid = first["pid"].as_u64().unwrap_or_default();
    assert!(pid > 0, "{first}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let again = status_when(&gw, |p| {
        p["state"] == "running" && p["restarts"] == 1 && p["pid"].as_u64() != Some(pid)
    })
    .await;
    assert!(
        again["lastError"]
            .as_str()
            .unwrap_or_default()
            .contains("exited"),
        "{again}"
    );
    writes(&dir, "k1", "owner", "are you there?");
    let sent = lines(&dir, "sent.jsonl", 1).await;
    assert_eq!(
        sent.first().map(|s| s["text"].clone()),
        Some(json!("Still here."))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_exits_at_once_is_restarted_and_says_why() {
    let gw = Gateway::start_with_files(
        "[plugins.quitter]\nenabled = true\n",
        vec![],
        &[
            (
                "plugins/quitter/lurkbot-plugin.toml",
                "name = \"quitter\"\nversion = \"1\"\ncommand = [\"python3\", \"-c\", \"import sys; print('bye', file=sys.stderr); sys.exit(3)\"]\n".into(),
            ),
        ],
    )
    .await;
    let failing = status_when(&gw, |p| p["restarts"].as_u64().unwrap_or(0) >= 1).await;
    let why = failing["lastError"].as_str().unwrap_or_default();
    assert!(why.contains("initialize"), "{failing}");
    assert_ne!(failing["state"], "running");
}

/// The shipped `quiet-hours` example: the tool it names is refused outside its hours (the
/// model reads why), another tool is not asked about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quiet_hours_example_refuses_its_tool_outside_its_hours() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/plugins/quiet-hours");
    let read = |f: &str| std::fs::read_to_string(example.join(f)).unwrap();
    // A window that is not now, in UTC.
    let secs = lurkbot_core::now_ms() / 1000;
    let hhmm = |s: u64| format!("{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60);
    let hours = format!("{}-{}", hhmm(secs + 3 * 3600), hhmm(secs + 4 * 3600));
    let gw = Gateway::start_with_files(
        &format!(
            "[plugins.quiet-hours]\nenabled = true\ntools = [\"terminal_exec\"]\nhours = \"{hours}\"\ntimezone = \"UTC\"\n"
        ),
        vec![
            Step::calls(&[
                ("c1", "terminal_exec", json!({"command": "help"})),
                ("c2", "read", json!({"path": "workspace/AGENTS.md"})),
            ]),
            Step::text("Done."),
        ],
        &[
            ("plugins/quiet-hours/lurkbot-plugin.toml", read("lurkbot-plugin.toml")),
            ("plugins/quiet-hours/main.py", read("main.py")),
        ],
    )
    .await;
    status_when(&gw, |p| p["state"] == "running").await;
    let answer = crate::common::http()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(json!({"messages": [{"role": "user", "content": "look around"}]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let requests = gw.fake.requests();
    assert_eq!(requests.len(), 2);
    let results: Vec<Value> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    let exec = results[0]["content"].to_string();
    assert!(
        exec.contains(&format!(
            "terminal_exec is only used between {}",
            hours.replace('-', " and ")
        )),
        "{exec}"
    );
    let read_result = results[1]["content"].to_string();
    assert!(
        !read_result.contains("refused by a plugin"),
        "{read_result}"
    );
}

/// On several gateways a plugin's channel is a lease like any channel's: the plugin runs where
/// the channel is received (`waiting` on the gateway standing by), and starts on the other
/// when the first stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_plugin_runs_on_the_gateway_holding_its_channel() {
    let mut first = Gateway::start_with_files(
        "[plugins.echo]\nenabled = true\n[channels.echo]\nallow_from = [\"owner\"]\n",
        vec![Step::text("From the second.")],
        &[
            (
                "plugins/echo/lurkbot-plugin.toml",
                MANIFEST.replace(", \"hook:before_tool\"", ""),
            ),
            ("plugins/echo/main.py", PLUGIN.into()),
        ],
    )
    .await;
    let dir = first.home.join("plugins/echo");
    status_when(&first, |p| p["state"] == "running").await;
    let second = first.on_same_home().await;
    status_when(&second, |p| p["state"] == "waiting").await;
    assert_eq!(
        lines(&dir, "starts.jsonl", 1).await.len(),
        1,
        "started on both gateways"
    );

    first.stop().await;
    status_when(&second, |p| p["state"] == "running").await;
    assert_eq!(lines(&dir, "starts.jsonl", 2).await.len(), 2);
    assert_eq!(
        lines(&dir, "stops.jsonl", 1).await.len(),
        1,
        "the first's plugin was not asked to shut down"
    );
    writes(&dir, "s1", "owner", "who answers?");
    let sent = lines(&dir, "sent.jsonl", 1).await;
    assert_eq!(
        sent.first().map(|s| s["text"].clone()),
        Some(json!("From the second."))
    );
}

/// The web UI's Channels panel shows the plugins, in a real Chromium.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_channels_panel_shows_the_plugins_in_chromium() {
    let gw = echo_gateway(vec![]).await;
    status_when(&gw, |p| p["state"] == "running").await;
    let ui = crate::browser::Ui::signed_in(&gw).await;
    let b = &ui.browser;
    crate::browser::click(b, "#channels-toggle").await;
    let state = crate::browser::until(
        b,
        "the echo plugin's row",
        "document.querySelector('#plugin-rows tr[data-plugin=\"echo\"] td:nth-child(2)')?.textContent",
    )
    .await;
    assert_eq!(state, json!("running"));
    let provides = b
        .execute(
            "return document.querySelector('#plugin-rows tr[data-plugin=\"echo\"] td:nth-child(4)').textContent;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(provides, json!("channel:echo, hook:before_tool"));
}
