//! The nodes of this gateway (ARCHITECTURE.md §5.2): the paired-device store, the node
//! connections live now, and the invocations waiting for a node's answer. Everything that sends
//! a node a command — the `nodes` tool, the owner's `node.invoke` — calls [`Nodes::invoke`],
//! after the gate has decided (the `node_control` module).
//!
//! A device reaches nothing before the owner approves it: an invocation checks the store, not
//! the connection, so a rejection takes effect at once, and rejecting closes its connections.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use lurkbot_core::Home;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::nodes::devices::{Declared, DeviceError, DeviceRecord, DeviceState, DeviceStore};
use crate::protocol::Out;
use crate::protocol::device::ProvenDevice;
use crate::protocol::node::{InvokeOutcome, InvokeRequest};
use crate::protocol::{ErrorCode, MethodError};

/// Most invocations waiting on one node at once.
const MAX_WAITING_PER_NODE: usize = 32;
/// Longest an invocation may wait.
pub(crate) const MAX_INVOKE_TIMEOUT: Duration = Duration::from_secs(600);
/// Default wait.
pub(crate) const DEFAULT_INVOKE_TIMEOUT: Duration = Duration::from_secs(30);

/// One live node connection.
struct Link {
    conn_id: String,
    out: mpsc::UnboundedSender<Out>,
}

struct Waiting {
    device: String,
    answer: oneshot::Sender<InvokeOutcome>,
}

/// The registry.
pub struct Nodes {
    store: Mutex<DeviceStore>,
    links: Mutex<HashMap<String, Link>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl std::fmt::Debug for Nodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nodes").finish_non_exhaustive()
    }
}

fn unavailable(message: impl Into<String>) -> MethodError {
    MethodError::new(ErrorCode::Unavailable, message)
}

fn store_error(e: DeviceError) -> MethodError {
    match e {
        DeviceError::Unknown(_) | DeviceError::Ambiguous(_) => {
            MethodError::new(ErrorCode::NotFound, e.to_string())
        }
        other => unavailable(other.to_string()),
    }
}

impl Nodes {
    /// The registry of `home`.
    pub fn new(home: &Home) -> Self {
        Self {
            store: Mutex::new(DeviceStore::open(home)),
            links: Mutex::new(HashMap::new()),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// The devices, read again when another gateway may have changed them (a shared store).
    fn store(&self) -> std::sync::MutexGuard<'_, DeviceStore> {
        let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        store.refresh();
        store
    }

    fn links(&self) -> std::sync::MutexGuard<'_, HashMap<String, Link>> {
        self.links.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a node's proven `connect`; its record (pending when new).
    ///
    /// # Errors
    /// A rejected device, a known id with another key, an unreadable store.
    pub(crate) fn admit(
        &self,
        proven: &ProvenDevice,
        declared: Declared,
    ) -> Result<DeviceRecord, MethodError> {
        let record = self.store().admit(proven, declared).map_err(|e| match e {
            DeviceError::KeyMismatch(_) => MethodError::invalid(e.to_string()),
            other => unavailable(other.to_string()),
        })?;
        if record.state == DeviceState::Rejected {
            return Err(MethodError::new(
                ErrorCode::Forbidden,
                format!(
                    "device {} was rejected by the gateway's owner (`lurkbot devices approve {}` admits it)",
                    record.name, record.id
                ),
            ));
        }
        Ok(record)
    }

    /// Registers a live connection of `device` (a newer one replaces an older one, which is
    /// closed).
    pub(crate) fn attach(&self, device: &str, conn_id: &str, out: mpsc::UnboundedSender<Out>) {
        let old = self.links().insert(
            device.to_string(),
            Link {
                conn_id: conn_id.to_string(),
                out,
            },
        );
        if let Some(old) = old {
            let _ = old
                .out
                .send(Out::Close(4000, "replaced by a newer connection".into()));
        }
    }

    /// Forgets the connection `conn_id` of `device` (its waiting invocations fail).
    pub(crate) fn detach(&self, device: &str, conn_id: &str) {
        let mut links = self.links();
        if links.get(device).is_some_and(|l| l.conn_id == conn_id) {
            links.remove(device);
            drop(links);
            self.fail_waiting(device, "the node disconnected");
        }
    }

    fn fail_waiting(&self, device: &str, why: &str) {
        let gone: Vec<Waiting> = {
            let mut waiting = self.waiting();
            let ids: Vec<String> = waiting
                .iter()
                .filter(|(_, w)| w.device == device)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| waiting.remove(id)).collect()
        };
        for w in gone {
            let _ = w.answer.send(InvokeOutcome::Err {
                code: "UNAVAILABLE".into(),
                message: why.into(),
            });
        }
    }

    /// Whether `device` is approved now (the store decides, every time).
    pub(crate) fn is_approved(&self, device: &str) -> bool {
        self.store().list().is_ok_and(|all| {
            all.iter()
                .any(|d| d.id == device && d.state == DeviceState::Approved)
        })
    }

    /// The owner's decision on a device; rejecting closes its connection and fails what waits.
    ///
    /// # Errors
    /// No such device, or the store cannot be written.
    pub fn decide(&self, wanted: &str, state: DeviceState) -> Result<DeviceRecord, MethodError> {
        let record = self.store().decide(wanted, state).map_err(store_error)?;
        if state == DeviceState::Rejected {
            if let Some(link) = self.links().remove(&record.id) {
                let _ = link
                    .out
                    .send(Out::Close(4001, "rejected by the gateway's owner".into()));
            }
            self.fail_waiting(&record.id, "the device was rejected");
        }
        Ok(record)
    }

    /// `devices list`: every device's row.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn devices(&self) -> Result<Vec<Value>, MethodError> {
        let store = self.store();
        let all = store.list().map_err(store_error)?;
        Ok(all.iter().map(DeviceRecord::row).collect())
    }

    /// `device.pair.list`: every device's row (`devices`), and OpenClaw's view of the same —
    /// `pending` requests (the request id is the device id) and `paired` devices — for its
    /// `openclaw devices` command.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn pairing_list(&self) -> Result<Value, MethodError> {
        let store = self.store();
        let all = store.list().map_err(store_error)?;
        let openclaw = |d: &DeviceRecord| {
            json!({"deviceId": d.id, "publicKey": d.public_key, "displayName": d.name,
                "platform": d.platform, "clientId": d.client, "role": d.role, "roles": [d.role],
                "scopes": []})
        };
        let pending: Vec<Value> = all
            .iter()
            .filter(|d| d.state == DeviceState::Pending)
            .map(|d| {
                let mut v = openclaw(d);
                v["requestId"] = json!(d.id);
                v["ts"] = json!(d.requested_at_ms);
                v
            })
            .collect();
        let paired: Vec<Value> = all
            .iter()
            .filter(|d| d.state == DeviceState::Approved)
            .map(|d| {
                let mut v = openclaw(d);
                v["createdAtMs"] = json!(d.requested_at_ms);
                v["approvedAtMs"] = json!(d.decided_at_ms);
                v
            })
            .collect();
        let rows: Vec<Value> = all.iter().map(DeviceRecord::row).collect();
        Ok(json!({"devices": rows, "pending": pending, "paired": paired}))
    }

    /// `nodes list`: approved devices, `{id, name, platform, connected, commands, caps}` (the
    /// commands it may be sent), with `unapprovedCommands` when it declared more since.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn list(&self) -> Result<Vec<Value>, MethodError> {
        let store = self.store();
        let all = store.list().map_err(store_error)?;
        let links = self.links();
        Ok(all
            .iter()
            .filter(|d| d.state == DeviceState::Approved)
            .map(|d| {
                let mut row = json!({"id": d.id, "name": d.name, "platform": d.platform,
                    "connected": links.contains_key(&d.id), "commands": d.usable_commands(),
                    "caps": d.caps, "nodeId": d.id, "displayName": d.name, "paired": true});
                let more = d.unapproved_commands();
                if !more.is_empty() {
                    row["unapprovedCommands"] = json!(more);
                }
                row
            })
            .collect())
    }

    /// The approved node `wanted` names.
    ///
    /// # Errors
    /// Unknown, ambiguous, or not approved.
    pub fn resolve(&self, wanted: &str) -> Result<DeviceRecord, MethodError> {
        let store = self.store();
        let record = store.find(wanted).map_err(store_error)?;
        if record.state != DeviceState::Approved {
            return Err(MethodError::new(
                ErrorCode::Forbidden,
                format!(
                    "node {} is {}: nothing is sent to it until the owner approves it (`lurkbot devices approve {}`)",
                    record.name,
                    record.state.as_str(),
                    record.id
                ),
            ));
        }
        Ok(record.clone())
    }

    /// Sends `command` to the approved, connected node `node` and waits up to `timeout` for its
    /// answer. The caller has already passed the gate.
    ///
    /// # Errors
    /// Not approved, not connected, the command not declared, too many waiting, no answer in
    /// time.
    pub async fn invoke(
        &self,
        node: &DeviceRecord,
        command: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<InvokeOutcome, MethodError> {
        if !self.is_approved(&node.id) {
            return Err(MethodError::new(
                ErrorCode::Forbidden,
                format!("node {} is not approved", node.name),
            ));
        }
        if node.unapproved_commands().iter().any(|c| c == command) {
            return Err(MethodError::new(
                ErrorCode::Forbidden,
                format!(
                    "node {} declared '{command}' after it was approved; nothing is sent until the owner approves it again (`lurkbot devices approve {}`)",
                    node.name, node.id
                ),
            ));
        }
        if !node.usable_commands().iter().any(|c| c == command) {
            return Err(MethodError::invalid(format!(
                "node {} does not offer '{command}'; it offers: {}",
                node.name,
                node.usable_commands().join(", ")
            )));
        }
        let timeout = timeout.min(MAX_INVOKE_TIMEOUT);
        let id = format!("inv_{}", lurkbot_core::random_hex(8));
        let (tx, rx) = oneshot::channel();
        {
            let mut waiting = self.waiting();
            if waiting.values().filter(|w| w.device == node.id).count() >= MAX_WAITING_PER_NODE {
                return Err(unavailable(format!(
                    "node {} already has {MAX_WAITING_PER_NODE} invocations waiting; try again when they end",
                    node.name
                )));
            }
            waiting.insert(
                id.clone(),
                Waiting {
                    device: node.id.clone(),
                    answer: tx,
                },
            );
        }
        let request = InvokeRequest {
            id: id.clone(),
            node_id: node.id.clone(),
            command: command.to_string(),
            params,
            timeout_ms: u64::try_from(timeout.as_millis()).ok(),
        };
        let (event, payload) = request.event(&id);
        let sent = self
            .links()
            .get(&node.id)
            .is_some_and(|l| l.out.send(Out::Shaped(event, payload)).is_ok());
        if !sent {
            self.waiting().remove(&id);
            return Err(unavailable(format!(
                "node {} is not connected now",
                node.name
            )));
        }
        let answer = tokio::time::timeout(timeout, rx).await;
        self.waiting().remove(&id);
        match answer {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(_)) => Err(unavailable("the node's connection ended")),
            Err(_) => Err(unavailable(format!(
                "node {} did not answer '{command}' within {} s",
                node.name,
                timeout.as_secs()
            ))),
        }
    }

    /// A node's `node.invoke.result`: hands the outcome to the invocation waiting for it.
    ///
    /// # Errors
    /// Malformed, or no invocation of this node waits under that id.
    pub(crate) fn resolve_result(&self, device: &str, params: &Value) -> Result<(), MethodError> {
        let (id, outcome) = InvokeOutcome::parse(params)
            .ok_or_else(|| MethodError::invalid("node.invoke.result needs id, nodeId and ok"))?;
        let mut waiting = self.waiting();
        match waiting.get(&id) {
            Some(w) if w.device == device => {}
            _ => {
                return Err(MethodError::new(
                    ErrorCode::NotFound,
                    format!(
                        "no invocation {id} waits for this node (answered, timed out, or never sent)"
                    ),
                ));
            }
        }
        if let Some(w) = waiting.remove(&id) {
            let _ = w.answer.send(outcome);
        }
        Ok(())
    }

    /// Whether the owner has approved any device (the `nodes` tool is offered only then).
    pub fn any_approved(&self) -> bool {
        self.store()
            .list()
            .is_ok_and(|all| all.iter().any(|d| d.state == DeviceState::Approved))
    }

    /// Nodes for `status`: `{paired, connected, pending}`.
    pub fn summary(&self) -> Value {
        let store = self.store();
        let all = store.list().unwrap_or_default();
        let count = |s: DeviceState| all.iter().filter(|d| d.state == s).count();
        json!({"paired": count(DeviceState::Approved), "pending": count(DeviceState::Pending),
            "connected": self.links().len()})
    }
}
