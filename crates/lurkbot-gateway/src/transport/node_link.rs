//! A node's connection (`role: "node"`, OpenClaw's protocol 3–4): its signed identity is
//! checked against this connection's challenge, it is recorded in the device store (pending
//! when new), and then it serves invocations. Until the owner approves the device, every
//! request it makes is answered `UNAVAILABLE` with what the owner must do, and nothing is sent
//! to it; approval takes effect on the live connection (OpenClaw's node host retries by
//! itself). A node calls node methods only: operator methods answer `FORBIDDEN`. Requests are
//! answered in order on the connection's own task, so a node flooding results waits for
//! itself; frames are capped as for every client.

use std::net::IpAddr;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, close_code};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::nodes::devices::Declared;
use crate::protocol::Out;
use crate::protocol::node::{INVOKE_RESULT, NODE_EVENT};
use crate::protocol::{
    self, Challenge, ErrorCode, Event, Grants, MethodError, ProtocolVersion, TICK_INTERVAL_MS, Tick,
};
use crate::state::AppState;
use crate::transport::writer::{Writer, binary_refused};

/// Methods a node may call.
const NODE_METHODS: &[&str] = &[
    INVOKE_RESULT,
    NODE_EVENT,
    SKILLS_UPDATE,
    TOOLS_UPDATE,
    INVENTORY_UPDATE,
];
/// What OpenClaw's node host publishes after connecting: skills, tools and its runner
/// inventory. Acknowledged with what is in effect — nothing: LurkBot offers no node-published
/// skills or tools to its agent (they would be a node's text in the owner's prompt).
const SKILLS_UPDATE: &str = "node.skills.update";
const TOOLS_UPDATE: &str = "node.pluginTools.update";
const INVENTORY_UPDATE: &str = "node.runnerInventory.update";

/// A node admitted on this connection.
pub(crate) struct NodeConn {
    device: String,
    name: String,
    conn_id: String,
}

/// Checks a node's `connect` and answers it; `None` when refused (the refusal was sent).
pub(crate) fn handshake(
    state: &AppState,
    version: ProtocolVersion,
    (id, params): (&str, &Value),
    challenge: &Challenge,
    out: &mpsc::UnboundedSender<Out>,
    ip: IpAddr,
) -> Option<NodeConn> {
    let refuse = |error: MethodError| {
        tracing::warn!(peer = %ip, reason = %error.message, "node connect refused");
        let _ = out.send(Out::Frame(protocol::err(Some(id), &error)));
        let _ = out.send(Out::Close(close_code::POLICY, error.message));
        None
    };
    if !version.is_openclaw() {
        return refuse(MethodError::invalid(
            "the node role is spoken on protocol 3–4 (OpenClaw's); connect with minProtocol 3",
        ));
    }
    let proven = match protocol::device::verify(params, &challenge.nonce, lurkbot_core::now_ms()) {
        Ok(p) => p,
        Err(why) => {
            return refuse(MethodError::invalid(format!(
                "device identity refused: {why}"
            )));
        }
    };
    let record = match state.nodes.admit(&proven, Declared::from_connect(params)) {
        Ok(r) => r,
        Err(e) => return refuse(e),
    };
    let conn_id = format!("conn_{}", lurkbot_core::random_hex(6));
    tracing::info!(peer = %ip, conn_id, device = %record.id, name = %record.name,
        state = record.state.as_str(), "node connected");
    let mut hello = crate::openclaw::hello(state, version, &conn_id, &Grants::none());
    hello["auth"] = json!({"role": "node", "scopes": []});
    hello["features"]["methods"] = json!(NODE_METHODS);
    hello["features"]["events"] = json!([protocol::node::INVOKE_REQUEST, "tick", "shutdown"]);
    let _ = out.send(Out::Frame(protocol::ok(id, hello)));
    let _ = out.send(Out::SpeakOpenClaw(Default::default()));
    state.nodes.attach(&record.id, &conn_id, out.clone());
    Some(NodeConn {
        device: record.id,
        name: record.name,
        conn_id,
    })
}

/// Serves an admitted node until it leaves, is rejected, or the gateway stops.
pub(crate) async fn serve(
    state: &AppState,
    node: &NodeConn,
    stream: &mut futures_util::stream::SplitStream<WebSocket>,
    rx: &mut mpsc::UnboundedReceiver<Out>,
    writer: &mut Writer,
) {
    let mut stopping = state.stopping();
    let mut tick = tokio::time::interval(Duration::from_millis(TICK_INTERVAL_MS));
    tick.tick().await;
    loop {
        let item = tokio::select! {
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if writer.refused_oversized(text.len()).await {
                        break;
                    }
                    Out::Frame(answer(state, node, text.as_str()))
                }
                Some(Ok(Message::Binary(_))) => binary_refused(),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => continue,
            },
            Some(item) = rx.recv() => item,
            _ = tick.tick() => Out::Event(Event::Tick(Tick { ts: lurkbot_core::now_ms() })),
            _ = stopping.changed() => {
                writer.say_stopping().await;
                break;
            }
        };
        if !writer.write(item).await {
            break;
        }
    }
    state.nodes.detach(&node.device, &node.conn_id);
    tracing::info!(device = %node.device, name = %node.name, "node left");
}

/// The response to one request of a node.
fn answer(state: &AppState, node: &NodeConn, text: &str) -> Value {
    let request = match protocol::parse_request(text) {
        Ok(r) => r,
        Err((id, e)) => return protocol::err(id.as_deref(), &e),
    };
    let id = request.id.as_str();
    let result = if !NODE_METHODS.contains(&request.method.as_str()) {
        Err(MethodError::new(
            ErrorCode::Forbidden,
            format!(
                "'{}' is not a node method; a node calls {}",
                request.method,
                NODE_METHODS.join(", ")
            ),
        ))
    } else if !state.nodes.is_approved(&node.device) {
        Err(MethodError::new(
            ErrorCode::Unavailable,
            format!(
                "this device awaits the gateway owner's approval: `lurkbot devices approve {}` on the gateway's machine; the node may keep retrying",
                node.device
            ),
        ))
    } else if request.method == INVOKE_RESULT {
        state
            .nodes
            .resolve_result(&node.device, &request.params)
            .map(|()| json!({"ok": true}))
    } else {
        let node_id = node.device.as_str();
        Ok(match request.method.as_str() {
            SKILLS_UPDATE => json!({"nodeId": node_id, "skills": []}),
            TOOLS_UPDATE => json!({"nodeId": node_id, "tools": []}),
            INVENTORY_UPDATE => json!({"nodeId": node_id}),
            // node.event: acknowledged; LurkBot keeps no node telemetry.
            _ => {
                let event = request
                    .params
                    .get("event")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                json!({"ok": true, "event": event, "handled": false})
            }
        })
    };
    match result {
        Ok(payload) => protocol::ok(id, payload),
        Err(e) => protocol::err(Some(id), &e),
    }
}
