//! The owner's device and node methods (ARCHITECTURE.md §5.2), behind `lurkbot devices` and
//! `lurkbot nodes`: `device.pair.list|approve|reject`, `node.list|describe|invoke`. The
//! operator protocol is an owner entry point, so `node.invoke` asks as the owner (no further
//! approval: the owner is the human); it still takes the one path of
//! [`crate::nodes::control::invoke`], with its checks and its log.

use lurkbot_agent::gate::Asker;
use serde_json::{Value, json};

use crate::methods::handler::Method;
use crate::nodes::devices::DeviceState;
use crate::nodes::registry::Nodes;
use crate::protocol::{MethodError, Scope};
use crate::turns::host::SessionHost;

/// The methods, in the gateway's table.
pub(crate) const METHODS: &[Method] = &[
    Method {
        name: "device.pair.list",
        scope: Scope::Pairing,
        handler: |s, _| Box::pin(async { s.nodes.pairing_list() }),
    },
    Method {
        name: "device.pair.approve",
        scope: Scope::Pairing,
        handler: |s, p| Box::pin(async { decide(&s.nodes, p, DeviceState::Approved) }),
    },
    Method {
        name: "device.pair.reject",
        scope: Scope::Pairing,
        handler: |s, p| Box::pin(async { decide(&s.nodes, p, DeviceState::Rejected) }),
    },
    Method {
        name: "node.list",
        scope: Scope::Read,
        handler: |s, _| {
            Box::pin(async { Ok(json!({"ts": lurkbot_core::now_ms(), "nodes": s.nodes.list()?})) })
        },
    },
    Method {
        name: "node.describe",
        scope: Scope::Read,
        handler: |s, p| Box::pin(async { crate::nodes::control::describe(&s.nodes, p) }),
    },
    Method {
        name: "node.invoke",
        scope: Scope::Write,
        handler: |s, p| Box::pin(invoke(&s.nodes, &s.host, p)),
    },
];

fn decide(nodes: &Nodes, params: &Value, decision: DeviceState) -> Result<Value, MethodError> {
    let wanted = ["deviceId", "requestId", "id"]
        .iter()
        .find_map(|k| params.get(*k).and_then(Value::as_str))
        .ok_or_else(|| MethodError::invalid("give deviceId (from device.pair.list)"))?;
    let record = nodes.decide(wanted, decision)?;
    tracing::info!(device = %record.id, name = %record.name, state = record.state.as_str(), "device decided by the owner");
    Ok(json!({"requestId": record.id, "deviceId": record.id, "device": record.row()}))
}

async fn invoke(nodes: &Nodes, host: &SessionHost, params: &Value) -> Result<Value, MethodError> {
    let call = crate::nodes::control::Call::from_params(params)?;
    let outcome = crate::nodes::control::invoke(nodes, host, "owner", Asker::Owner, call).await?;
    Ok(outcome.to_json())
}
