//! Nodes (ARCHITECTURE.md §5.2) end to end: OpenClaw's own node host and a second LurkBot home
//! (`lurkbot node run`) join a `lurkbot gateway`, wait for `lurkbot devices approve`, and
//! answer `lurkbot nodes invoke` and the scripted model's `nodes` tool; restarts, rejection,
//! a forged identity and a replayed signature.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use lurkbot_gateway::protocol::device::{Identity, Signed};
use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_test_support::openclaw::OpenClaw;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::util::{Test, start_gateway, start_gateway_on};

/// Stops a node host when the test ends, however it ends.
struct Host(Child);

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `lurkbot ARGS…` on `t` until `done` holds for its JSON output (a node connecting, a
/// reconnect after a restart); the last output when it never does within 90 s.
fn until(t: &Test, args: &[&str], done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = t.run(args);
        let value: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        if done(&value) {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{args:?} never got there: {} {}",
            out.stdout,
            out.stderr
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn named<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list.as_array()?.iter().find(|d| d["name"] == name)
}

/// OpenClaw's node host (npm `openclaw`, Node 24): pending → approve → listed with its
/// commands → answers → the gateway restarts → reconnected without a new approval → rejected →
/// refused.
#[test]
fn openclaws_node_host_pairs_answers_survives_a_restart_and_is_refused_once_rejected() {
    let t = Test::init();
    let port = lurkbot_test_support::ports::free_port();
    let gw = start_gateway_on(&t, &[], port);
    let cli = OpenClaw::new();
    let state = tempfile::tempdir().unwrap();
    let mut command = cli.command(&[
        "node",
        "run",
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--no-tls",
        "--display-name",
        "ocnode",
    ]);
    command
        .env("OPENCLAW_GATEWAY_TOKEN", t.gateway_token())
        .env("OPENCLAW_STATE_DIR", state.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _host = Host(command.spawn().unwrap());

    let devices = until(&t, &["devices", "list", "--json"], |d| {
        named(d, "ocnode").is_some()
    });
    let device = named(&devices, "ocnode").unwrap();
    assert_eq!(device["state"], "pending", "{devices}");
    assert_eq!(device["role"], "node");
    assert_eq!(device["platform"], "linux");
    let id = device["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 64, "the id is the key's SHA-256");
    // Pending: nothing is sent to it.
    let params = r#"{"bins": ["ls", "no-such-program-here"]}"#;
    let refused = t.run(&[
        "nodes",
        "invoke",
        "ocnode",
        "system.which",
        "--params",
        params,
    ]);
    assert_eq!(refused.status, 1);
    assert!(
        refused.stderr.contains("FORBIDDEN") && refused.stderr.contains("pending"),
        "{}",
        refused.stderr
    );
    assert_eq!(t.run(&["nodes", "list", "--json"]).json(), json!([]));

    // OpenClaw's own CLI sees the request and approves it, as against its own gateway.
    let url = format!("ws://127.0.0.1:{port}");
    let token = t.gateway_token();
    let target = ["--url", url.as_str(), "--token", token.as_str()];
    let openclaw = |args: &[&str]| {
        let output = cli.command(&[args, &target[..]].concat()).output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let err = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "openclaw {args:?}: {text}{err}");
        text
    };
    let listed: Value = serde_json::from_str(&openclaw(&["devices", "list", "--json"])).unwrap();
    assert_eq!(listed["pending"][0]["deviceId"], id.as_str(), "{listed}");
    assert_eq!(listed["pending"][0]["requestId"], id.as_str(), "{listed}");
    openclaw(&["devices", "approve", &id]);
    let devices = t.run(&["devices", "list", "--json"]).json();
    assert_eq!(named(&devices, "ocnode").unwrap()["state"], "approved");
    let nodes = until(&t, &["nodes", "list", "--json"], |n| {
        named(n, "ocnode").is_some_and(|n| n["connected"] == true)
    });
    let commands = &named(&nodes, "ocnode").unwrap()["commands"];
    for needed in ["system.run", "system.which"] {
        assert!(
            commands.as_array().unwrap().iter().any(|c| c == needed),
            "{nodes}"
        );
    }
    let status: Value = serde_json::from_str(&openclaw(&["nodes", "status", "--json"])).unwrap();
    assert_eq!(status["nodes"][0]["nodeId"], id.as_str(), "{status}");
    assert_eq!(status["nodes"][0]["connected"], true, "{status}");
    let which = |t: &Test| {
        let out = t.run(&[
            "nodes",
            "invoke",
            "ocnode",
            "system.which",
            "--params",
            params,
            "--json",
        ]);
        assert_eq!(out.status, 0, "{} {}", out.stdout, out.stderr);
        out.json()
    };
    let answer = which(&t);
    assert_eq!(answer["ok"], true, "{answer}");
    assert!(
        answer["payload"]["bins"]["ls"]
            .as_str()
            .unwrap()
            .ends_with("/ls"),
        "{answer}"
    );
    assert!(
        answer["payload"]["bins"]
            .get("no-such-program-here")
            .is_none()
    );
    // OpenClaw's host runs a command line given as one string (sent as its argv), under its own
    // exec approvals.
    let line = r#"{"command": "echo from-openclaw"}"#;
    let ran = t.run(&["nodes", "invoke", "ocnode", "system.run", "--params", line]);
    assert_eq!(
        (ran.status, ran.stdout.as_str()),
        (0, "from-openclaw\n"),
        "{}",
        ran.stderr
    );

    // The gateway restarts on the same address: the host reconnects, still approved.
    let (status, _) = gw.stop();
    assert_eq!(status, 0);
    let gw = start_gateway_on(&t, &[], port);
    until(&t, &["nodes", "list", "--json"], |n| {
        named(n, "ocnode").is_some_and(|n| n["connected"] == true)
    });
    assert_eq!(which(&t)["ok"], true);
    let devices = t.run(&["devices", "list", "--json"]).json();
    assert_eq!(named(&devices, "ocnode").unwrap()["state"], "approved");

    // Rejected: its connection is closed and its reconnects are refused.
    let rejected = t.run(&["devices", "reject", "ocnode"]);
    assert_eq!(rejected.status, 0, "{}", rejected.stderr);
    assert_eq!(t.run(&["nodes", "list", "--json"]).json(), json!([]));
    let refused = t.run(&["nodes", "invoke", &id, "system.which", "--params", params]);
    assert_eq!(refused.status, 1);
    assert!(refused.stderr.contains("rejected"), "{}", refused.stderr);
    // Its reconnect is refused in the gateway's log.
    let deadline = Instant::now() + Duration::from_secs(90);
    while !gw.stderr().contains("node connect refused") {
        assert!(
            Instant::now() < deadline,
            "no refused reconnect: {}",
            gw.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = std::fs::read_to_string(t.path("logs/nodes.jsonl")).unwrap();
    assert!(
        log.lines().count() >= 2 && log.contains("\"asker\":\"owner\""),
        "{log}"
    );
    assert!(
        log.contains("\"outcome\":\"refused\"") || log.contains("\"command\":\"system.which\"")
    );
}

/// A client signed in with the gateway's token on `url`.
pub(crate) async fn client(url: &str, token: &str) -> Ws {
    let (mut ws, _, _) = Ws::open(url).await;
    let hello = ws
        .call(
            "connect",
            json!({"minProtocol": 1, "maxProtocol": 1,
                "client": {"id": "test", "version": "1", "platform": "linux", "mode": "ui"},
                "auth": {"token": token}}),
            &mut Vec::new(),
        )
        .await;
    assert_eq!(hello["ok"], true, "{hello}");
    ws
}

/// A connection of the test's own, as a client speaks to the gateway.
pub(crate) struct Ws {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next: u64,
}

impl Ws {
    /// Opens `url` and reads the challenge: `(socket, nonce, ts)`.
    pub(crate) async fn open(url: &str) -> (Self, String, u64) {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut me = Self { ws, next: 0 };
        let challenge = me.frame().await;
        let nonce = challenge["payload"]["nonce"].as_str().unwrap().to_string();
        let ts = challenge["payload"]["ts"].as_u64().unwrap();
        (me, nonce, ts)
    }

    pub(crate) async fn frame(&mut self) -> Value {
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(t))) => return serde_json::from_str(t.as_str()).unwrap(),
                Some(Ok(Message::Close(_))) | None => return Value::Null,
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("{e}"),
            }
        }
    }

    /// Sends a request and reads until its response (events on the way are handed to `seen`).
    pub(crate) async fn call(
        &mut self,
        method: &str,
        params: Value,
        seen: &mut Vec<Value>,
    ) -> Value {
        self.next += 1;
        let id = format!("t{}", self.next);
        let frame = json!({"type": "req", "id": id, "method": method, "params": params});
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
        loop {
            let frame = self.frame().await;
            if frame.is_null() || (frame["type"] == "res" && frame["id"] == id) {
                return frame;
            }
            seen.push(frame);
        }
    }
}

/// A second home serves the first as a node: pairing, `system.run` of `help` returning the
/// node's own command list, an invoke before approval refused, a command carrying `--confirm`
/// held until a human approves it, the scripted model using `nodes`, a forged identity and a
/// replayed signature refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_lurkbot_home_serves_as_a_node_through_pairing_approvals_and_the_model() {
    let fake = FakeProvider::start(vec![]).await;
    let base = format!("{}/v1", fake.url);
    let t = Test::init();
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(
        t.path("config.toml"),
        config + "\n[nodes]\nallow = { laptop = [\"rss list\"] }\n",
    )
    .unwrap();
    let gw = start_gateway(
        &t,
        &[("LURKBOT_MODEL", "openai/fake"), ("OPENAI_BASE_URL", &base)],
    );
    let token = t.gateway_token();
    let node_home = Test::init();
    std::fs::write(node_home.path("workspace/note.txt"), "from the node").unwrap();
    let config = std::fs::read_to_string(node_home.path("config.toml")).unwrap();
    let config = config.replace(
        "# commands = [\"irc send\", \"zip\"]",
        "commands = [\"rss list\"]",
    );
    assert!(config.contains("commands = [\"rss list\"]"));
    std::fs::write(node_home.path("config.toml"), config).unwrap();
    let mut command = node_home.command(
        &["node", "run", "--gateway", &gw.ws, "--name", "laptop"],
        &[("LURKBOT_GATEWAY_TOKEN", token.as_str())],
    );
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let _host = Host(command.spawn().unwrap());

    let devices = until(&t, &["devices", "list", "--json"], |d| {
        named(d, "laptop").is_some()
    });
    let device = named(&devices, "laptop").unwrap().clone();
    assert_eq!(device["state"], "pending");
    let id = device["id"].as_str().unwrap().to_string();
    // The identity is the node home's own, private, and no tool may read it.
    let kept = std::fs::read_to_string(node_home.path("devices/identity.json")).unwrap();
    assert!(kept.contains(&id));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(node_home.path("devices/identity.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let read = node_home.exec_json("zip create --src devices --out artifacts/keys.zip --confirm");
    assert_eq!(
        read["result"]["files_added"], 0,
        "the key is never archived: {read}"
    );
    assert_eq!(read["result"]["skipped"]["secret"], 1, "{read}");

    let help = r#"{"command": "help"}"#;
    let early = t.run(&["nodes", "invoke", "laptop", "system.run", "--params", help]);
    assert_eq!(early.status, 1, "an invoke before approval is refused");
    assert!(early.stderr.contains("pending"), "{}", early.stderr);

    // A forged identity: another key claiming laptop's id; then a signature for another
    // connection's challenge.
    let url = gw.ws.trim_end_matches("/ws").to_string() + "/";
    let forger = Identity::generate().unwrap();
    let signed = Signed {
        client_id: "node-host",
        client_mode: "node",
        role: "node",
        scopes: &[],
        token: &token,
        platform: std::env::consts::OS,
        device_family: "",
    };
    let connect = |device: Value| {
        json!({"minProtocol": 4, "maxProtocol": 4, "role": "node", "scopes": [],
        "client": {"id": "node-host", "mode": "node", "platform": std::env::consts::OS, "version": "1"},
        "commands": ["system.run"], "auth": {"token": token}, "device": device})
    };
    let (mut ws, nonce, ts) = Ws::open(&url).await;
    let mut forged = forger.sign(&signed, &nonce, ts);
    forged["id"] = json!(id);
    let answer = ws.call("connect", connect(forged), &mut Vec::new()).await;
    assert_eq!(answer["ok"], false, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("SHA-256"),
        "{answer}"
    );
    let (mut ws, _, ts) = Ws::open(&url).await;
    let replayed = forger.sign(&signed, &nonce, ts);
    let answer = ws.call("connect", connect(replayed), &mut Vec::new()).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("replayed"),
        "{answer}"
    );
    let devices = t.run(&["devices", "list", "--json"]).json();
    assert_eq!(
        devices.as_array().unwrap().len(),
        1,
        "refused connects record nothing: {devices}"
    );

    assert_eq!(t.run(&["devices", "approve", "laptop"]).status, 0);
    let nodes = until(&t, &["nodes", "list", "--json"], |n| {
        named(n, "laptop").is_some_and(|n| n["connected"] == true)
    });
    assert_eq!(
        named(&nodes, "laptop").unwrap()["commands"],
        json!(["system.run", "system.which", "device.info"])
    );
    // `help` runs in the node's home and prints its commands.
    let out = t.run(&["nodes", "invoke", "laptop", "system.run", "--params", help]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("zip") && out.stdout.contains("rss"),
        "{}",
        out.stdout
    );
    assert!(
        node_home.audit_text().contains("help"),
        "audited in the node's home"
    );
    assert!(!t.audit_text().contains("\"help\""), "not in the gateway's");
    let info = t
        .run(&["nodes", "invoke", "laptop", "device.info", "--json"])
        .json();
    assert_eq!(info["payload"]["displayName"], "laptop");
    assert_eq!(info["payload"]["deviceId"], id.as_str());
    // A secret-carrying flag is masked in both logs, as in the terminal's audit.
    let secret = r#"{"command": "help --token hunter2-secret"}"#;
    t.run(&[
        "nodes",
        "invoke",
        "laptop",
        "system.run",
        "--params",
        secret,
    ]);
    for log in [
        std::fs::read_to_string(t.path("logs/nodes.jsonl")).unwrap(),
        std::fs::read_to_string(node_home.path("logs/node.jsonl")).unwrap(),
    ] {
        assert!(
            log.contains("--token") && !log.contains("hunter2-secret"),
            "{log}"
        );
    }

    // The model: `nodes` is offered now; a `--confirm` command waits for a human.
    let zip = "zip create --src workspace/note.txt --out artifacts/n.zip --confirm";
    fake.push(vec![
        Step::calls(&[
            ("c1", "nodes", json!({"action": "list"})),
            (
                "c1b",
                "nodes",
                json!({"action": "describe", "node": "laptop"}),
            ),
        ]),
        Step::call(
            "c2",
            "nodes",
            json!({"action": "invoke", "node": "laptop",
            "command": "system.run", "params": {"command": zip}}),
        ),
        Step::call(
            "c3",
            "nodes",
            json!({"action": "invoke", "node": "laptop",
            "command": "system.run", "params": {"command": "rss list"}}),
        ),
        Step::text("Zipped on the laptop."),
    ]);
    fake.record(true);
    let mut ws = client(&gw.ws, &token).await;
    let mut seen = Vec::new();
    let sent = ws
        .call(
            "chat.send",
            json!({"sessionKey": "agent:main:main", "message": "zip it there"}),
            &mut seen,
        )
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    let asked = loop {
        let frame = match seen.pop() {
            Some(f) => f,
            None => ws.frame().await,
        };
        if frame["event"] == "exec.approval.requested" {
            break frame;
        }
    };
    let payload = &asked["payload"];
    assert_eq!(payload["tool"], "nodes");
    assert!(
        payload["summary"].as_str().unwrap().contains(zip),
        "{asked}"
    );
    assert_eq!(payload["allowAlways"], false, "approved each time: {asked}");
    assert!(
        !node_home.path("artifacts/n.zip").exists(),
        "nothing ran before the approval"
    );
    let resolved = ws
        .call(
            "exec.approval.resolve",
            json!({"approvalId": payload["approvalId"], "decision": "allow-once"}),
            &mut seen,
        )
        .await;
    assert_eq!(resolved["ok"], true, "{resolved}");
    loop {
        let frame = match seen.pop() {
            Some(f) => f,
            None => ws.frame().await,
        };
        if frame["event"] == "chat" && frame["payload"]["state"] == "final" {
            break;
        }
        assert!(!frame.is_null(), "the connection ended before the turn");
    }
    assert!(
        node_home.path("artifacts/n.zip").exists(),
        "the approved command ran on the node"
    );
    let requests = fake.requests();
    let offered = requests[0].body["tools"].to_string();
    assert!(
        offered.contains("\"nodes\""),
        "the model is offered nodes once one is paired"
    );
    let results = requests.last().unwrap().body["messages"].to_string();
    let described = requests[1].body["messages"].to_string();
    assert!(
        described.contains("device.info") && described.contains("\\\"connected\\\":true"),
        "{described}"
    );
    assert!(
        results.contains("laptop") && results.contains("\\\"success\\\":true"),
        "{results}"
    );
    let log = std::fs::read_to_string(t.path("logs/nodes.jsonl")).unwrap();
    assert!(
        log.contains("\"asker\":\"model\"") && log.contains("n.zip"),
        "{log}"
    );
    let node_log = std::fs::read_to_string(node_home.path("logs/node.jsonl")).unwrap();
    assert!(
        node_log.contains("n.zip") && node_log.contains("device.info"),
        "{node_log}"
    );
    // The node's own approvals: `[nodes] allow` lets the model run `rss list` without asking,
    // but the node's `[approvals]` hold it, and no human approved it: nothing runs there.
    let held = results.contains("APPROVAL_REQUIRED") && results.contains("rss list");
    assert!(held, "{results}");
    assert!(
        !node_home.audit_text().contains("rss list"),
        "nothing ran on the node"
    );
}
