//! Protocol 1 method by method (ARCHITECTURE.md §7d), from the outside, with a probe plugin of
//! a few lines of Python whose behaviour its settings choose: `host.state.put|get` (each
//! plugin's keys its own, a malformed key and a value over 1 MiB refused), `channel.receive`
//! without its id or for a channel the plugin does not provide refused, `host.log`, an unknown
//! method refused,
//! `hook.message_received` told, `channel.send` refused with `retryAfterMs` (sent again with
//! the same key) or `permanent` (kept as failed in the outbox), a `before_tool` hook that never
//! answers (counted as its `on_failure`: deny by default, allow when set), and a plugin that
//! never answers `initialize` (restarted, and its status says why).

use std::path::Path;
use std::time::{Duration, Instant};

use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};
use crate::plugins::{delivers, lines};

const WAIT: Duration = Duration::from_secs(30);

const PROBE: &str = r#"import json, os, sys, threading, time
lock = threading.Lock()
def send(m):
    with lock:
        sys.stdout.write(json.dumps(m) + "\n")
        sys.stdout.flush()
def log(name, m):
    with open(name, "a") as f:
        f.write(json.dumps(m) + "\n")
settings, labels, n = {}, {}, [0]
def ask(method, params, label):
    n[0] += 1
    labels[n[0]] = label
    send({"jsonrpc": "2.0", "id": n[0], "method": method, "params": params})
def deliver():
    while True:
        for name in sorted(os.listdir("inbox")):
            path = os.path.join("inbox", name)
            with open(path) as f:
                params = json.load(f)
            os.remove(path)
            ask("channel.receive", params, "receive")
        time.sleep(0.02)
os.makedirs("inbox", exist_ok=True)
sends = 0
for line in sys.stdin:
    m = json.loads(line)
    method, id = m.get("method"), m.get("id")
    if method == "initialize":
        settings = m["params"]["config"]
        if settings.get("initialize") != "never":
            send({"jsonrpc": "2.0", "id": id, "result": {"provides": []}})
    elif method == "initialized":
        ask("host.state.put", {"key": "seen", "value": {"by": settings.get("who")}}, "put")
        ask("host.state.get", {"key": "seen"}, "get")
        ask("host.state.get", {"key": "../beta/seen"}, "bad key")
        ask("host.log", {"level": "warn", "message": "the probe says hello"}, "log")
        ask("no.such.method", {}, "unknown")
        ask("channel.receive", {"channel": settings.get("channel") or "none", "chat": "x"}, "incomplete")
        ask("channel.receive", {"channel": "nope", "id": "1", "chat": "a", "sender": "a"}, "not mine")
        ask("host.state.put", {"key": "big", "value": "x" * (1024 * 1024 + 10)}, "too big")
        if settings.get("channel"):
            send({"jsonrpc": "2.0", "method": "channel.status", "params": {"channel": settings["channel"], "state": "connected"}})
            threading.Thread(target=deliver, daemon=True).start()
    elif method == "channel.send":
        log("sent.jsonl", m["params"])
        sends += 1
        how = settings.get("send")
        if how == "retry" and sends == 1:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "busy", "data": {"retryAfterMs": 100}}})
        elif how == "permanent":
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "no such chat", "data": {"permanent": True}}})
        else:
            send({"jsonrpc": "2.0", "id": id, "result": {}})
    elif method == "hook.message_received":
        log("received.jsonl", m["params"])
        send({"jsonrpc": "2.0", "id": id, "result": {}})
    elif method == "hook.before_tool":
        log("hooks.jsonl", m["params"])
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": id, "result": {}})
    elif method is None:
        log("answers.jsonl", {"label": labels.get(id), "result": m.get("result"), "error": m.get("error")})
"#;

/// A probe plugin's files: `name`, providing `provides`.
fn probe(name: &'static str, provides: &str) -> Vec<(&'static str, String)> {
    let manifest = format!(
        "name = \"{name}\"\nversion = \"1\"\ncommand = [\"python3\", \"main.py\"]\nprovides = [{provides}]\n"
    );
    let (toml, main): (&'static str, &'static str) = match name {
        "alpha" => ("plugins/alpha/lurkbot-plugin.toml", "plugins/alpha/main.py"),
        "beta" => ("plugins/beta/lurkbot-plugin.toml", "plugins/beta/main.py"),
        "mute" => ("plugins/mute/lurkbot-plugin.toml", "plugins/mute/main.py"),
        _ => ("plugins/gate/lurkbot-plugin.toml", "plugins/gate/main.py"),
    };
    vec![(toml, manifest), (main, PROBE.into())]
}

/// Plugin `name`'s entry of `plugins.status` once `done` holds.
async fn plugin_when(gw: &Gateway, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let (mut c, _) = Client::connect(gw, TOKEN).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let all = c.request("plugins.status", json!({})).await["payload"].clone();
        let entry = all["plugins"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .cloned()
            .unwrap_or_default();
        if done(&entry) {
            return entry;
        }
        assert!(Instant::now() < deadline, "never: {all}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The answer the probe logged for its request `label`.
async fn answer(dir: &Path, label: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let all = lines(dir, "answers.jsonl", 0).await;
        if let Some(found) = all.into_iter().find(|a| a["label"] == label) {
            return found;
        }
        assert!(Instant::now() < deadline, "no answer to {label}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_answers_a_plugins_requests_and_keeps_each_plugins_state_apart() {
    let mut files = probe("alpha", "\"channel:alpha\", \"hook:message_received\"");
    files.extend(probe("beta", ""));
    let gw = Gateway::start_with_files(
        "[plugins.alpha]\nenabled = true\nwho = \"alpha\"\nchannel = \"alpha\"\nsend = \"retry\"\n[plugins.beta]\nenabled = true\nwho = \"beta\"\n[channels.alpha]\nallow_from = [\"owner\"]\n",
        vec![Step::text("Sent on the second try.")],
        &files,
    )
    .await;
    let (alpha, beta) = (gw.home.join("plugins/alpha"), gw.home.join("plugins/beta"));
    assert_eq!(answer(&alpha, "put").await["result"], json!({}));
    assert_eq!(
        answer(&alpha, "get").await["result"],
        json!({"value": {"by": "alpha"}})
    );
    // The same key, another plugin: its own value.
    assert_eq!(
        answer(&beta, "get").await["result"],
        json!({"value": {"by": "beta"}})
    );
    let store = lurkbot_state::Store::open(&gw.home).unwrap();
    assert_eq!(
        store
            .document("plugins/alpha/state/seen")
            .unwrap()
            .as_deref(),
        Some("{\"by\":\"alpha\"}")
    );
    let bad = answer(&alpha, "bad key").await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(answer(&alpha, "log").await["result"], json!({}));
    assert_eq!(answer(&alpha, "unknown").await["error"]["code"], -32601);
    // Refusals: a message without its id, one for a channel the plugin does not provide, a
    // value over 1 MiB (and nothing of it kept).
    for label in ["incomplete", "not mine", "too big"] {
        let refused = answer(&alpha, label).await;
        assert_eq!(refused["error"]["code"], -32602, "{label}: {refused}");
    }
    assert_eq!(store.document("plugins/alpha/state/big").unwrap(), None);

    // A message: told to the message_received hook; the reply refused once with retryAfterMs,
    // then sent again with the same key.
    delivers(
        &alpha,
        &json!({"channel": "alpha", "id": "m1", "chat": "owner", "sender": "owner", "text": "hi there"}),
    );
    let told = lines(&alpha, "received.jsonl", 1).await;
    assert_eq!(
        told[0],
        json!({"channel": "alpha", "sender": "owner", "text": "hi there"})
    );
    let sent = lines(&alpha, "sent.jsonl", 2).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(
        sent[0]["key"], sent[1]["key"],
        "a retry is the same message"
    );
    assert_eq!(sent[1]["text"], "Sent on the second try.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_send_error_is_kept_as_failed_in_the_outbox() {
    let gw = Gateway::start_with_files(
        "[plugins.alpha]\nenabled = true\nwho = \"alpha\"\nchannel = \"alpha\"\nsend = \"permanent\"\n[channels.alpha]\nallow_from = [\"owner\"]\n",
        vec![Step::text("Nobody will read this.")],
        &probe("alpha", "\"channel:alpha\""),
    )
    .await;
    let alpha = gw.home.join("plugins/alpha");
    delivers(
        &alpha,
        &json!({"channel": "alpha", "id": "m1", "chat": "owner", "sender": "owner", "text": "hi"}),
    );
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let status = c.request("channels.status", json!({})).await["payload"].clone();
        if status["outbox"]["failed"] == 1 {
            assert!(status.to_string().contains("no such chat"), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        lines(&alpha, "sent.jsonl", 1).await.len(),
        1,
        "a permanent error is not retried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_never_answers_counts_as_its_on_failure_and_a_mute_plugin_is_restarted() {
    for (on_failure, refused) in [("", true), ("on_failure = \"allow\"\n", false)] {
        let mut files = probe("gate", "\"hook:before_tool\"");
        files.extend(probe("mute", ""));
        let gw = Gateway::start_with_files(
            &format!(
                "[plugins.gate]\nenabled = true\n{on_failure}[plugins.mute]\nenabled = true\ninitialize = \"never\"\n"
            ),
            vec![
                Step::call("c1", "read", json!({"path": "workspace/AGENTS.md"})),
                Step::text("Done."),
            ],
            &files,
        )
        .await;
        plugin_when(&gw, "gate", |p| p["state"] == "running").await;
        let answer = crate::common::http()
            .post(gw.url("/v1/chat/completions"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(json!({"messages": [{"role": "user", "content": "read it"}]}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(
            lines(&gw.home.join("plugins/gate"), "hooks.jsonl", 1)
                .await
                .len(),
            1
        );
        let requests = gw.fake.requests();
        let result = requests[1].body["messages"].to_string();
        assert_eq!(
            result.contains("could not answer") && result.contains("on_failure is deny"),
            refused,
            "{result}"
        );
        if refused {
            // Never answering initialize: started again, and the status says why.
            let mute = plugin_when(&gw, "mute", |p| p["restarts"].as_u64().unwrap_or(0) >= 1).await;
            let why = mute["lastError"].as_str().unwrap_or_default();
            assert!(why.contains("did not answer initialize"), "{mute}");
        }
    }
}
