//! The node role on the wire (ARCHITECTURE.md §5.2, §6): every frame the gateway sends a node —
//! the handshake, refusals while pending, an invocation, acknowledgements — and every frame
//! LurkBot's node side builds (`protocol::node`: its `connect`, its results) validated against
//! OpenClaw's published protocol.schema.json; a pending device reaches no method, a node calls
//! no operator method, results nobody waits for are refused one by one without harm, and an
//! oversized frame closes the connection.

use lurkbot_gateway::devices::DeviceState;
use lurkbot_gateway::protocol::device::Identity;
use lurkbot_gateway::protocol::node::{InvokeOutcome, InvokeRequest, connect_params};
use lurkbot_test_support::openclaw::OpenClaw;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};

/// Frames for the validator: `sent` marks the node's own requests.
#[derive(Default)]
struct Recorded(Vec<Value>);

impl Recorded {
    fn got(&mut self, method: Option<&str>, frame: &Value) {
        self.0.push(json!({"method": method, "frame": frame}));
    }
    fn sent(&mut self, frame: &Value) {
        self.0
            .push(json!({"method": frame["method"], "frame": frame, "sent": true}));
    }
}

async fn node_request(c: &mut Client, rec: &mut Recorded, method: &str, params: Value) -> Value {
    c.next += 1;
    let frame = lurkbot_gateway::protocol::request(&format!("n{}", c.next), method, params);
    rec.sent(&frame);
    c.send(&frame).await;
    loop {
        let got = c.recv().await.expect("an answer");
        rec.got(Some(method), &got);
        if got["type"] == "res" && got["id"] == frame["id"] {
            return got;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_speaks_openclaws_schema_and_reaches_nothing_before_approval() {
    let gw = Gateway::start("", vec![]).await;
    let cli = OpenClaw::new();
    let me = Identity::generate().unwrap();
    let mut rec = Recorded::default();
    let mut node = Client::open(&gw).await;
    let challenge = node.recv().await.unwrap();
    rec.got(None, &challenge);
    let nonce = challenge["payload"]["nonce"].as_str().unwrap();
    let ts = challenge["payload"]["ts"].as_u64().unwrap();
    let params = connect_params(&me, (nonce, ts), "wire", TOKEN, &["system.which"]);
    let hello = node_request(&mut node, &mut rec, "connect", params).await;
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(
        hello["payload"]["auth"],
        json!({"role": "node", "scopes": []})
    );
    let devices = gw.state.nodes.devices().unwrap();
    assert_eq!(devices[0]["state"], "pending", "{devices:?}");
    assert_eq!(devices[0]["id"], me.id());

    // Pending: every request is answered UNAVAILABLE with what the owner must do.
    let early = node_request(&mut node, &mut rec, "node.event", json!({"event": "x"})).await;
    assert_eq!(early["error"]["code"], "UNAVAILABLE", "{early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .unwrap()
            .contains("lurkbot devices approve")
    );
    // A node never calls operator methods, pending or not.
    let operator = node_request(&mut node, &mut rec, "chat.send", json!({"message": "hi"})).await;
    assert_eq!(operator["error"]["code"], "FORBIDDEN", "{operator}");

    gw.state
        .nodes
        .decide("wire", DeviceState::Approved)
        .unwrap();
    let ack = node_request(
        &mut node,
        &mut rec,
        "node.event",
        json!({"event": "node.host.stats", "payloadJSON": "{}"}),
    )
    .await;
    assert_eq!(ack["ok"], true, "{ack}");
    let skills = node_request(
        &mut node,
        &mut rec,
        "node.skills.update",
        json!({"skills": []}),
    )
    .await;
    assert_eq!(skills["payload"]["skills"], json!([]));

    // The owner invokes; the node answers with what LurkBot's node side builds.
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let call = tokio::spawn(async move {
        let answer = owner
            .request(
                "node.invoke",
                json!({"node": "wire", "command": "system.which",
                "params": {"bins": ["zip"]}, "timeoutMs": 20000}),
            )
            .await;
        (owner, answer)
    });
    let asked = loop {
        let frame = node.recv().await.unwrap();
        rec.got(None, &frame);
        if frame["event"] == "node.invoke.request" {
            break frame;
        }
    };
    let request = InvokeRequest::parse(&asked["payload"]).unwrap();
    assert_eq!(request.params, json!({"bins": ["zip"]}));
    let outcome = InvokeOutcome::Ok(json!({"bins": {"zip": "terminal_exec zip"}}));
    let done = node_request(
        &mut node,
        &mut rec,
        "node.invoke.result",
        outcome.result_params(&request),
    )
    .await;
    assert_eq!(done["ok"], true, "{done}");
    let (mut owner, answer) = call.await.unwrap();
    assert_eq!(
        answer["payload"],
        json!({"ok": true, "payload": {"bins": {"zip": "terminal_exec zip"}}})
    );
    // Not a declared command: refused before anything is sent.
    let undeclared = owner
        .request(
            "node.invoke",
            json!({"node": "wire", "command": "system.run", "params": {"command": "help"}}),
        )
        .await;
    assert_eq!(
        undeclared["error"]["code"], "INVALID_REQUEST",
        "{undeclared}"
    );

    // Results nobody waits for: each refused, the connection unharmed.
    for n in 0..50 {
        let bogus =
            json!({"id": format!("inv_{n}"), "nodeId": me.id(), "ok": true, "payloadJSON": "{}"});
        let refused = node_request(&mut node, &mut rec, "node.invoke.result", bogus).await;
        assert_eq!(refused["error"]["code"], "NOT_FOUND", "{refused}");
    }
    let nodes = owner.request("node.list", json!({})).await;
    assert_eq!(nodes["payload"]["nodes"][0]["connected"], true, "{nodes}");

    // Validated before the connection is closed by an oversized frame.
    let (checked, report) = crate::common::validate_openclaw_frames(&cli, &rec.0);
    for definition in [
        "GatewayFrame",
        "HelloOk",
        "NodeInvokeRequestEvent",
        "NodeEventResult",
        "RequestFrame",
        "ConnectParams",
        "NodeInvokeResultParams",
        "NodeEventParams",
    ] {
        assert!(
            checked["checked"][definition].as_u64().unwrap_or(0) > 0,
            "{definition} never checked: {report}"
        );
    }

    let huge = "x".repeat(lurkbot_gateway::protocol::MAX_PAYLOAD + 1);
    node.send(
        &json!({"type": "req", "id": "big", "method": "node.event", "params": {"event": huge}}),
    )
    .await;
    let refused = node.recv().await.unwrap();
    assert_eq!(refused["ok"], false);
    assert_eq!(node.close_code().await, Some(1009));
    // Gone: the owner is told so.
    let gone = owner
        .request(
            "node.invoke",
            json!({"node": "wire", "command": "system.which", "params": {}}),
        )
        .await;
    assert_eq!(gone["error"]["code"], "UNAVAILABLE", "{gone}");

    // Rejected: a fresh connect is refused.
    gw.state
        .nodes
        .decide("wire", DeviceState::Rejected)
        .unwrap();
    let mut again = Client::open(&gw).await;
    let challenge = again.recv().await.unwrap();
    let nonce = challenge["payload"]["nonce"].as_str().unwrap();
    let ts = challenge["payload"]["ts"].as_u64().unwrap();
    let res = again
        .request(
            "connect",
            connect_params(&me, (nonce, ts), "wire", TOKEN, &[]),
        )
        .await;
    assert_eq!(res["error"]["code"], "FORBIDDEN", "{res}");
}

/// A node connection of `me` declaring `commands`, past its hello.
async fn join(gw: &Gateway, me: &Identity, commands: &[&str]) -> Client {
    let mut node = Client::open(gw).await;
    let challenge = node.recv().await.unwrap();
    let nonce = challenge["payload"]["nonce"].as_str().unwrap().to_string();
    let ts = challenge["payload"]["ts"].as_u64().unwrap();
    let res = node
        .request(
            "connect",
            connect_params(me, (&nonce, ts), "grower", TOKEN, commands),
        )
        .await;
    assert_eq!(res["ok"], true, "{res}");
    node
}

/// The owner approves what a device declared; a command it declares after that is not sent
/// until the owner approves the device again (OpenClaw's capability approval).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_a_node_declares_after_approval_wait_for_the_owner_again() {
    let gw = Gateway::start("", vec![]).await;
    let me = Identity::generate().unwrap();
    let first = join(&gw, &me, &["device.info"]).await;
    gw.state
        .nodes
        .decide("grower", DeviceState::Approved)
        .unwrap();
    drop(first);
    let _second = join(&gw, &me, &["device.info", "system.run"]).await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let nodes = owner.request("node.list", json!({})).await;
    let row = &nodes["payload"]["nodes"][0];
    assert_eq!(row["commands"], json!(["device.info"]), "{nodes}");
    assert_eq!(row["unapprovedCommands"], json!(["system.run"]), "{nodes}");
    let devices = owner.request("device.pair.list", json!({})).await;
    assert_eq!(
        devices["payload"]["devices"][0]["unapprovedCommands"],
        json!(["system.run"])
    );
    let refused = owner
        .request(
            "node.invoke",
            json!({"node": "grower", "command": "system.run",
            "params": {"command": "help"}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], "FORBIDDEN", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("approves it again")
    );
    gw.state
        .nodes
        .decide("grower", DeviceState::Approved)
        .unwrap();
    let nodes = owner.request("node.list", json!({})).await;
    let row = &nodes["payload"]["nodes"][0];
    assert_eq!(
        row["commands"],
        json!(["device.info", "system.run"]),
        "{nodes}"
    );
    assert!(row.get("unapprovedCommands").is_none());
}

/// A node role is spoken on protocol 3–4 only, an unknown role is refused, and an invocation
/// the node never answers ends at its timeout with `UNAVAILABLE` (the node stays connected).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_roles_are_refused_and_an_unanswered_invocation_times_out() {
    let gw = Gateway::start("", vec![]).await;
    let me = Identity::generate().unwrap();
    for (protocol, role, expected) in [(1, "node", "protocol 3"), (4, "admin", "unknown role")] {
        let mut c = Client::open(&gw).await;
        let challenge = c.recv().await.unwrap();
        let nonce = challenge["payload"]["nonce"].as_str().unwrap().to_string();
        let ts = challenge["payload"]["ts"].as_u64().unwrap();
        let mut params = connect_params(&me, (&nonce, ts), "odd", TOKEN, &[]);
        params["minProtocol"] = json!(protocol);
        params["maxProtocol"] = json!(protocol);
        params["role"] = json!(role);
        let res = c.request("connect", params).await;
        assert_eq!(res["ok"], false, "{res}");
        let message = res["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message}");
    }
    assert!(
        gw.state.nodes.devices().unwrap().is_empty(),
        "nothing recorded"
    );

    let mut silent = join(&gw, &me, &["device.info"]).await;
    gw.state
        .nodes
        .decide("grower", DeviceState::Approved)
        .unwrap();
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let late = owner
        .request(
            "node.invoke",
            json!({"node": "grower", "command": "device.info", "timeoutMs": 300}),
        )
        .await;
    assert_eq!(late["error"]["code"], "UNAVAILABLE", "{late}");
    assert!(
        late["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{late}"
    );
    // The request did reach the node, and its late answer is refused as nobody's.
    let asked = silent.event(|e| e["event"] == "node.invoke.request").await;
    let request = InvokeRequest::parse(&asked["payload"]).unwrap();
    let params = InvokeOutcome::Ok(json!({})).result_params(&request);
    let refused = silent.request("node.invoke.result", params).await;
    assert_eq!(refused["error"]["code"], "NOT_FOUND", "{refused}");
}
