//! OpenClaw's protocol 4 on the wire (ARCHITECTURE.md §6): every frame a LurkBot gateway sends
//! on it — the handshake, methods, a streamed tool turn with `sessions.subscribe` on, refusals —
//! validated against OpenClaw's published protocol.schema.json with the test venv's
//! jsonschema; scopes enforced, runs named by the client's `idempotencyKey`, approvals in
//! OpenClaw's shape.

use lurkbot_llm::fake::Step;
use lurkbot_test_support::openclaw::OpenClaw;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};

/// Every frame of a connection on protocol 4: the handshake, methods, a streamed tool turn
/// with `sessions.subscribe` on, and refusals, written for the validator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_frame_sent_on_protocol_4_validates_against_openclaws_schema() {
    let gw = Gateway::start(
        "",
        vec![
            Step::calls(&[("call_1", "terminal_exec", json!({"command": "help"}))]),
            Step::text("All done."),
        ],
    )
    .await;
    let cli = OpenClaw::new();
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/", gw.addr))
        .await
        .unwrap();
    let mut c = Client {
        ws,
        events: Vec::new(),
        next: 0,
    };
    let mut frames: Vec<Value> = Vec::new();
    let mut record = |method: Option<&str>, frame: &Value| {
        frames.push(json!({"method": method, "frame": frame}));
    };
    let challenge = c.recv().await.unwrap();
    record(None, &challenge);
    c.send(
        &json!({"type": "req", "id": "c1", "method": "connect", "params": {
        "minProtocol": 4, "maxProtocol": 4, "role": "operator",
        "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
        "scopes": ["operator.admin"], "auth": {"token": TOKEN},
        "device": {"id": "d1", "publicKey": "k", "signature": "s", "signedAt": 1, "nonce": "n"}}}),
    )
    .await;
    let hello = c.recv().await.unwrap();
    record(Some("connect"), &hello);
    assert_eq!(hello["payload"]["protocol"], 4, "{hello}");
    assert_eq!(
        hello["payload"]["auth"]["scopes"],
        json!(["operator.admin"])
    );
    // Presence and health are pushed after hello-ok, as OpenClaw's gateway does.
    for expected in ["presence", "health"] {
        let pushed = c.recv().await.unwrap();
        assert_eq!(pushed["event"], expected, "{pushed}");
        record(None, &pushed);
    }

    let methods = [
        ("health", json!({})),
        ("status", json!({})),
        ("system-presence", json!({})),
        ("config.get", json!({})),
        ("logs.tail", json!({"limit": 5})),
        ("sessions.subscribe", json!({})),
        ("agents.list", json!({})),
        ("models.list", json!({})),
        ("commands.list", json!({})),
        ("question.list", json!({})),
        ("taskSuggestions.list", json!({})),
        ("plugin.approval.list", json!({})),
        ("no.such.method", json!({})),
        (
            "chat.send",
            json!({"sessionKey": "agent:main:main", "message": "go",
            "idempotencyKey": "run-from-the-client-1"}),
        ),
    ];
    for (method, params) in methods {
        let res = c.request(method, params).await;
        for event in c.events.drain(..) {
            frames.push(json!({"method": null, "frame": event}));
        }
        frames.push(json!({"method": method, "frame": res}));
    }
    // The turn streams under the client's own run id; read until its final chat event.
    let fin = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert_eq!(fin["payload"]["runId"], "run-from-the-client-1");
    assert_eq!(fin["payload"]["message"]["content"][0]["text"], "All done.");
    for event in c.events.drain(..) {
        frames.push(json!({"method": null, "frame": event}));
    }
    frames.push(json!({"method": null, "frame": fin}));
    for (method, params) in [
        ("sessions.list", json!({})),
        ("sessions.describe", json!({"key": "agent:main:main"})),
        ("chat.history", json!({"sessionKey": "agent:main:main"})),
        (
            "agent.wait",
            json!({"runId": "run-from-the-client-1", "timeoutMs": 5000}),
        ),
        ("sessions.delete", json!({"key": "agent:main:main"})),
    ] {
        let res = c.request(method, params).await;
        assert_eq!(res["ok"], true, "{method}: {res}");
        for event in c.events.drain(..) {
            frames.push(json!({"method": null, "frame": event}));
        }
        frames.push(json!({"method": method, "frame": res}));
    }
    let names: Vec<String> = frames
        .iter()
        .filter_map(|f| f["frame"]["event"].as_str().map(str::to_string))
        .collect();
    for needed in ["agent", "chat", "session.message", "sessions.changed"] {
        assert!(names.iter().any(|n| n == needed), "no {needed}: {names:?}");
    }

    let (checked, report) = crate::common::validate_openclaw_frames(&cli, &frames);
    for definition in [
        "GatewayFrame",
        "HelloOk",
        "AgentEvent",
        "ChatEvent",
        "health",
        "LogsTailResult",
        "AgentsListResult",
        "SessionRow",
        "PresenceEntry",
        "SessionsDeleteResult",
    ] {
        assert!(
            checked["checked"][definition].as_u64().unwrap_or(0) > 0,
            "{definition} never checked: {report}"
        );
    }
    assert_eq!(
        checked["checked"]["GatewayFrame"].as_u64().unwrap() as usize,
        frames.len()
    );
}

/// A protocol-4 connection with `scopes`, past its hello and pushed events.
async fn connect_v4(gw: &Gateway, scopes: &[&str]) -> Client {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/", gw.addr))
        .await
        .unwrap();
    let mut c = Client {
        ws,
        events: Vec::new(),
        next: 0,
    };
    c.recv().await.unwrap();
    let hello = c
        .request(
            "connect",
            json!({"minProtocol": 3, "maxProtocol": 4, "role": "operator",
                "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
                "scopes": scopes, "auth": {"token": TOKEN}}),
        )
        .await;
    assert_eq!(hello["payload"]["protocol"], 4, "{hello}");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_are_enforced_and_approvals_use_openclaws_shapes_on_protocol_4() {
    let create = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";
    let gw = Gateway::start(
        "[permissions]\ncalendar = \"read-write\"\n",
        vec![
            Step::call("c1", "terminal_exec", json!({"command": create})),
            Step::text("Booked it."),
        ],
    )
    .await;
    // A read-only client reads but cannot start a turn or answer approvals.
    let mut reader = connect_v4(&gw, &["operator.read"]).await;
    assert_eq!(reader.request("sessions.list", json!({})).await["ok"], true);
    for (method, params) in [
        (
            "chat.send",
            json!({"sessionKey": "agent:main:main", "message": "hi"}),
        ),
        (
            "exec.approval.resolve",
            json!({"id": "x", "decision": "deny"}),
        ),
        ("sessions.delete", json!({"key": "agent:main:main"})),
    ] {
        let refused = reader.request(method, params).await;
        assert_eq!(refused["error"]["code"], "FORBIDDEN", "{method}: {refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("missing scope: operator."),
            "{refused}"
        );
    }
    assert!(gw.fake.requests().is_empty(), "nothing reached the model");

    // `scopes` as a string instead of a list is refused, not read as every scope.
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/", gw.addr))
        .await
        .unwrap();
    let mut odd = Client {
        ws,
        events: Vec::new(),
        next: 0,
    };
    odd.recv().await.unwrap();
    let refused = odd
        .request(
            "connect",
            json!({"minProtocol": 3, "maxProtocol": 4, "role": "operator",
                "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
                "scopes": "operator.admin", "auth": {"token": TOKEN}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], "INVALID_REQUEST", "{refused}");
    assert!(odd.close_code().await.is_some(), "the connection is closed");

    // A writer without the approvals scope cannot confirm a command itself.
    let mut writer = connect_v4(&gw, &["operator.write"]).await;
    let confirmed = writer
        .request("terminal.exec", json!({"command": create}))
        .await;
    assert_eq!(confirmed["error"]["code"], "FORBIDDEN", "{confirmed}");
    assert!(
        confirmed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("operator.approvals"),
        "{confirmed}"
    );
    let listed = writer
        .request(
            "terminal.exec",
            json!({"command": "cal list-events --calendar-id 1"}),
        )
        .await;
    assert_eq!(
        listed["ok"], true,
        "a command without --confirm runs: {listed}"
    );

    let mut c = connect_v4(&gw, &["operator.write", "operator.approvals"]).await;
    let sent = c
        .request(
            "chat.send",
            json!({"sessionKey": "agent:main:main", "message": "book it", "idempotencyKey": "k-42"}),
        )
        .await;
    assert_eq!(sent["payload"]["runId"], "k-42", "{sent}");
    // The same key again is the same run, not a second turn.
    let again = c
        .request(
            "chat.send",
            json!({"sessionKey": "agent:main:main", "message": "book it", "idempotencyKey": "k-42"}),
        )
        .await;
    assert_eq!(again["payload"]["runId"], "k-42", "{again}");
    // A key that cannot be a run id is refused, and nothing starts.
    let bad = c
        .request(
            "chat.send",
            json!({"sessionKey": "agent:main:dm:web:x", "message": "hi", "idempotencyKey": "no spaces/allowed"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST", "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("idempotencyKey"),
        "{bad}"
    );
    let asked = c.event(|e| e["event"] == "exec.approval.requested").await;
    let request = &asked["payload"]["request"];
    assert_eq!(request["command"], create, "{asked}");
    assert_eq!(request["sessionKey"], "agent:main:main");
    let id = asked["payload"]["id"].as_str().unwrap().to_string();
    assert!(asked["payload"]["expiresAtMs"].as_u64() > asked["payload"]["createdAtMs"].as_u64());
    let listed = c.request("exec.approval.list", json!({})).await;
    assert_eq!(listed["payload"]["approvals"][0]["approvalId"], id.as_str());
    let resolved = c
        .request(
            "exec.approval.resolve",
            json!({"id": id, "decision": "allow-once"}),
        )
        .await;
    assert_eq!(resolved["payload"]["ok"], true, "{resolved}");
    let fin = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert_eq!(
        fin["payload"]["message"]["content"][0]["text"],
        "Booked it."
    );
    assert_eq!(gw.fake.requests().len(), 2, "one turn, not two");
}
