//! Sending a command to a node, whoever asks (ARCHITECTURE.md §5.1, §5.2): the `nodes` tool
//! (the model) and the owner's `node.invoke` take this one path. The gate decides from who
//! asked and the command (`Act::NodeCommand`: the model's `system.run` waits for a human each
//! time unless `[nodes] allow` lists it for that node); a `system.run` a human stands behind
//! (the owner's, or one a human approved) carries `approved: true` to a LurkBot node, which requires it before it runs a command its own
//! `[approvals]` hold (OpenClaw's node host applies its own exec approvals instead). Every invocation is appended to `logs/nodes.jsonl` (who, where, what,
//! how it ended; never the output).

use std::time::Duration;

use lurkbot_agent::gate::{self, Act, Asker, Hold, RUN_COMMANDS};
use serde_json::{Value, json};

use crate::nodes::registry::DEFAULT_INVOKE_TIMEOUT;
use crate::nodes::registry::Nodes;
use crate::protocol::node::{InvokeOutcome, LURKBOT_NODE};
use crate::protocol::{ErrorCode, MethodError};
use crate::turns::host::SessionHost;

/// The invocation log's file name under `logs/`.
pub(crate) const NODES_LOG: &str = "nodes.jsonl";

/// One invocation as asked.
pub(crate) struct Call<'a> {
    /// The node (id, id prefix or name).
    pub(crate) node: &'a str,
    /// The command.
    pub(crate) command: &'a str,
    /// Its parameters.
    pub(crate) params: Value,
    /// How long to wait.
    pub(crate) timeout: Duration,
}

impl<'a> Call<'a> {
    /// From `{node|nodeId, command, params?, timeoutMs?}`.
    pub(crate) fn from_params(params: &'a Value) -> Result<Self, MethodError> {
        let text = |k: &str| {
            params
                .get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let node = text("node")
            .or_else(|| text("nodeId"))
            .ok_or_else(|| MethodError::invalid("which node? give node (its name or id)"))?;
        let command = text("command")
            .ok_or_else(|| MethodError::invalid("give command, e.g. system.which or system.run"))?;
        let args = params.get("params").cloned().unwrap_or_else(|| json!({}));
        if !args.is_object() {
            return Err(MethodError::invalid("params must be an object"));
        }
        let timeout = params
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_INVOKE_TIMEOUT, Duration::from_millis);
        Ok(Self {
            node,
            command,
            params: args,
            timeout,
        })
    }
}

/// What a `system.run`'s `command` (a line, or OpenClaw's argv list) runs, split into words.
fn run_words(params: &Value) -> Vec<String> {
    match params.get("command") {
        Some(Value::String(line)) => lurkbot_term::parse_command(line).unwrap_or_default(),
        Some(Value::Array(argv)) => argv
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// Sends `call`, asked by `asker` from `session`, after the gate.
///
/// # Errors
/// The gate refused or nobody approved (`FORBIDDEN`), the node is unknown, unapproved or gone,
/// or did not answer in time.
pub(crate) async fn invoke(
    nodes: &Nodes,
    host: &SessionHost,
    session: &str,
    asker: Asker,
    mut call: Call<'_>,
) -> Result<InvokeOutcome, MethodError> {
    let node = nodes.resolve(call.node)?;
    let runs = RUN_COMMANDS.contains(&call.command);
    let words = if runs {
        run_words(&call.params)
    } else {
        Vec::new()
    };
    if runs && words.is_empty() {
        return Err(MethodError::invalid(
            "system.run needs params.command: the command line, e.g. {\"command\": \"help\"}",
        ));
    }
    // What is shown and logged: secret-carrying flags masked, as the terminal's audit does.
    let line = lurkbot_term::mask_argv(&words).join(" ");
    let (_, config, approvals) = host.current();
    let allowed = config
        .nodes
        .allows((node.id.as_str(), node.name.as_str()), &words);
    let verdict = gate::decide(
        asker,
        &Act::NodeCommand {
            node: &node.name,
            command: call.command,
            line: &line,
            allowed,
        },
    );
    // A human stands behind the act: the owner asked, or someone approves it below.
    let human = asker.is_owner()
        || matches!(
            verdict,
            gate::Verdict::Approve(_) | gate::Verdict::ApproveEach(_)
        );
    let summary = if runs {
        format!("{} `{line}` on node {}", call.command, node.name)
    } else {
        format!("{} on node {}", call.command, node.name)
    };
    let cleared = gate::clear(
        verdict,
        Hold {
            approver: &*host.approver,
            approvals: &approvals,
            session,
            tool: "nodes",
            summary,
            key: format!("nodes:{}:{}", node.id, call.command),
        },
    )
    .await;
    let record = |outcome: &str, code: Option<&str>| {
        let line = json!({"ts_ms": lurkbot_core::now_ms(), "session": session,
            "asker": asker.as_str(), "node": node.id, "name": node.name,
            "command": call.command, "line": (!line.is_empty()).then_some(&line),
            "outcome": outcome, "code": code});
        let path = host.home.join(lurkbot_core::layout::LOGS).join(NODES_LOG);
        if let Err(e) = lurkbot_core::append_private_line(&path, &line.to_string()) {
            tracing::warn!(error = %e, "cannot append to logs/nodes.jsonl");
        }
    };
    if let Err(reason) = cleared {
        record("refused", Some("FORBIDDEN"));
        return Err(MethodError::new(ErrorCode::Forbidden, reason));
    }
    let lurkbot_node = node.client.starts_with(LURKBOT_NODE);
    if runs && let Some(p) = call.params.as_object_mut() {
        if lurkbot_node && human {
            // LurkBot's node host runs what its own approvals hold only with this mark;
            // OpenClaw's applies its own exec approvals (an `approved` there must carry
            // OpenClaw's run plan).
            p.insert("approved".into(), true.into());
        } else if !lurkbot_node && p.get("command").is_some_and(Value::is_string) {
            // OpenClaw's host takes the command as argv.
            p.insert("command".into(), json!(words));
        }
    }
    let answer = nodes
        .invoke(&node, call.command, call.params.clone(), call.timeout)
        .await;
    match &answer {
        Ok(InvokeOutcome::Ok(_)) => record("ok", None),
        Ok(InvokeOutcome::Err { code, .. }) => record("failed", Some(code)),
        Err(e) => record("failed", Some(e.code.as_str())),
    }
    answer
}

/// The `nodes` tool's actions (and the operator's `node.describe`).
pub(crate) async fn tool(
    nodes: &Nodes,
    host: &SessionHost,
    session: &str,
    args: &Value,
    asker: Asker,
) -> Result<Value, MethodError> {
    match args.get("action").and_then(Value::as_str).unwrap_or("") {
        "list" => Ok(json!(nodes.list()?)),
        "describe" => describe(nodes, args),
        "invoke" => Ok(
            invoke(nodes, host, session, asker, Call::from_params(args)?)
                .await?
                .to_json(),
        ),
        other => Err(MethodError::invalid(format!(
            "unknown action '{other}' (list, describe, invoke)"
        ))),
    }
}

/// One node: `{id, name, platform, connected, commands, caps}`.
pub(crate) fn describe(nodes: &Nodes, args: &Value) -> Result<Value, MethodError> {
    let wanted = ["node", "nodeId"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .ok_or_else(|| MethodError::invalid("which node? give node (its name or id)"))?;
    let id = nodes.resolve(wanted)?.id;
    nodes
        .list()?
        .into_iter()
        .find(|n| n["id"] == id.as_str())
        .ok_or_else(|| MethodError::new(ErrorCode::NotFound, format!("no node '{wanted}'")))
}
