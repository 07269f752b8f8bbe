//! The node role's wire shapes (OpenClaw's protocol 3–4, `role: "node"`), defined once for the
//! gateway and for `lurkbot node run`: the node's `connect`, the `node.invoke.request` event
//! the gateway sends, and the `node.invoke.result` request the node answers with.

use serde_json::{Value, json};

use super::device::{Identity, Signed};

/// The event carrying one invocation to a node.
pub const INVOKE_REQUEST: &str = "node.invoke.request";
/// The node's answer to one invocation.
pub const INVOKE_RESULT: &str = "node.invoke.result";
/// A node-originated event (stats and the like).
pub const NODE_EVENT: &str = "node.event";
/// How `lurkbot node run` names itself in `userAgent` (its `client.id` is OpenClaw's
/// `node-host`, the schema's id for a headless node host).
pub const LURKBOT_NODE: &str = "lurkbot-node";
/// The protocol nodes speak (OpenClaw's current one).
pub const NODE_PROTOCOL: u64 = 4;

/// A node's `connect` parameters, signed by `identity` for the challenge `nonce`/`ts`.
pub fn connect_params(
    identity: &Identity,
    (nonce, ts): (&str, u64),
    name: &str,
    token: &str,
    commands: &[&str],
) -> Value {
    let platform = std::env::consts::OS;
    let signed = Signed {
        client_id: "node-host",
        client_mode: "node",
        role: "node",
        scopes: &[],
        token,
        platform,
        device_family: "",
    };
    json!({
        "minProtocol": NODE_PROTOCOL, "maxProtocol": NODE_PROTOCOL,
        "client": {"id": "node-host", "displayName": name, "version": env!("CARGO_PKG_VERSION"),
            "platform": platform, "mode": "node"},
        "role": "node", "scopes": [], "caps": ["system"], "commands": commands,
        "auth": {"token": token},
        "userAgent": format!("{LURKBOT_NODE}/{}", env!("CARGO_PKG_VERSION")),
        "device": identity.sign(&signed, nonce, ts),
    })
}

/// One invocation as the node receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeRequest {
    /// The invocation's id, echoed in the result.
    pub id: String,
    /// The node's id.
    pub node_id: String,
    /// The command (`system.run`, …).
    pub command: String,
    /// Its parameters (`paramsJSON` parsed; `{}` when absent).
    pub params: Value,
    /// How long the gateway waits.
    pub timeout_ms: Option<u64>,
}

impl InvokeRequest {
    /// The event's `(name, payload)` (OpenClaw's `NodeInvokeRequestEvent`).
    pub fn event(&self, idempotency_key: &str) -> (&'static str, Value) {
        let mut payload = json!({"id": self.id, "nodeId": self.node_id, "command": self.command,
            "paramsJSON": self.params.to_string(), "idempotencyKey": idempotency_key});
        if let Some(ms) = self.timeout_ms {
            payload["timeoutMs"] = ms.into();
        }
        (INVOKE_REQUEST, payload)
    }

    /// Reads the event's payload.
    pub fn parse(payload: &Value) -> Option<Self> {
        let text = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
        let params = match payload.get("paramsJSON").and_then(Value::as_str) {
            Some(raw) => serde_json::from_str(raw).ok()?,
            None => payload.get("params").cloned().unwrap_or_else(|| json!({})),
        };
        Some(Self {
            id: text("id")?,
            node_id: text("nodeId")?,
            command: text("command")?,
            params,
            timeout_ms: payload.get("timeoutMs").and_then(Value::as_u64),
        })
    }
}

/// What a node answered.
#[derive(Debug, Clone, PartialEq)]
pub enum InvokeOutcome {
    /// Done: its payload.
    Ok(Value),
    /// Failed: a code and a message.
    Err {
        /// A stable code (`UNAVAILABLE`, `INVALID_REQUEST`, the node's own).
        code: String,
        /// What went wrong.
        message: String,
    },
}

impl InvokeOutcome {
    /// The `node.invoke.result` params answering `request` (OpenClaw's `NodeInvokeResultParams`).
    pub fn result_params(&self, request: &InvokeRequest) -> Value {
        let mut params = json!({"id": request.id, "nodeId": request.node_id});
        match self {
            Self::Ok(payload) => {
                params["ok"] = true.into();
                params["payloadJSON"] = payload.to_string().into();
            }
            Self::Err { code, message } => {
                params["ok"] = false.into();
                params["error"] = json!({"code": code, "message": message});
            }
        }
        params
    }

    /// Reads `node.invoke.result` params: the invocation id and the outcome.
    pub fn parse(params: &Value) -> Option<(String, Self)> {
        let id = params.get("id")?.as_str()?.to_string();
        let outcome = if params.get("ok")?.as_bool()? {
            let payload = match params.get("payloadJSON").and_then(Value::as_str) {
                Some(raw) => serde_json::from_str(raw).unwrap_or(Value::String(raw.into())),
                None => params.get("payload").cloned().unwrap_or(Value::Null),
            };
            Self::Ok(payload)
        } else {
            let text = |k: &str| {
                params
                    .pointer(&format!("/error/{k}"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            Self::Err {
                code: text("code").unwrap_or_else(|| "UNAVAILABLE".into()),
                message: text("message").unwrap_or_else(|| "the node reported a failure".into()),
            }
        };
        Some((id, outcome))
    }

    /// `{ok, payload}` or `{ok: false, error: {code, message}}` (the owner CLI's shape).
    pub fn to_json(&self) -> Value {
        match self {
            Self::Ok(payload) => json!({"ok": true, "payload": payload}),
            Self::Err { code, message } => {
                json!({"ok": false, "error": {"code": code, "message": message}})
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invocation_and_its_result_round_trip() {
        let request = InvokeRequest {
            id: "i1".into(),
            node_id: "n1".into(),
            command: "system.which".into(),
            params: json!({"bins": ["ls"]}),
            timeout_ms: Some(5000),
        };
        let (name, payload) = request.event("k1");
        assert_eq!(name, INVOKE_REQUEST);
        assert_eq!(InvokeRequest::parse(&payload), Some(request.clone()));
        let ok = InvokeOutcome::Ok(json!({"bins": {"ls": "/usr/bin/ls"}}));
        assert_eq!(
            InvokeOutcome::parse(&ok.result_params(&request)),
            Some(("i1".into(), ok))
        );
        let failed = InvokeOutcome::Err {
            code: "UNAVAILABLE".into(),
            message: "no".into(),
        };
        assert_eq!(
            InvokeOutcome::parse(&failed.result_params(&request)),
            Some(("i1".into(), failed))
        );
    }
}
