//! The node host's connection and commands (see `cli/node.rs`).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use lurkbot_agent::Approvals;
use lurkbot_core::{Config, Home, layout};
use lurkbot_gateway::protocol::device::Identity;
use lurkbot_gateway::protocol::node::{
    INVOKE_REQUEST, INVOKE_RESULT, InvokeOutcome, InvokeRequest, connect_params,
};
use lurkbot_gateway::protocol::{self, method};
use lurkbot_term::{ExecRequest, TerminalExec, default_registry};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use crate::error::{CliError, CliResult};

/// The identity file, relative to the home.
pub(crate) const IDENTITY_FILE: &str = "devices/identity.json";
/// The invocation log's file name under `logs/`.
const NODE_LOG: &str = "node.jsonl";
/// The commands offered.
const COMMANDS: &[&str] = &["system.run", "system.which", "device.info"];
/// Longest wait between reconnects.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// This home's device identity, made and kept (0600) on first use.
pub(crate) fn identity(home: &Home) -> Result<Identity, String> {
    let path = home.join(IDENTITY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let kept: Value = serde_json::from_slice(&bytes)
                .map_err(|e| format!("{IDENTITY_FILE} is damaged ({e}); remove it to make a new identity (the gateway's owner must then approve this device again)"))?;
            let pkcs8 = kept["pkcs8Hex"]
                .as_str()
                .and_then(from_hex)
                .ok_or_else(|| {
                    format!("{IDENTITY_FILE} holds no key; remove it to make a new identity")
                })?;
            Identity::from_pkcs8(&pkcs8).map_err(|e| format!("{IDENTITY_FILE}: {e}"))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let made = Identity::generate()?;
            let text = json!({"deviceId": made.id(), "pkcs8Hex": to_hex(made.pkcs8())});
            if let Some(dir) = path.parent() {
                lurkbot_core::create_private_dir(dir).map_err(|e| e.to_string())?;
            }
            // Two first runs at once: the one written first wins, and both use it.
            if !lurkbot_core::write_new_atomic(&path, text.to_string().as_bytes(), 0o600)
                .map_err(|e| e.to_string())?
            {
                return identity(home);
            }
            Ok(made)
        }
        Err(e) => Err(format!("cannot read {IDENTITY_FILE}: {e}")),
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    text.len()
        .is_multiple_of(2)
        .then(|| {
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
                .collect()
        })
        .flatten()
}

/// What the node serves with.
pub(crate) struct Node {
    home: Home,
    identity: Identity,
    name: String,
    exec: TerminalExec,
}

impl Node {
    pub(crate) fn new(home: Home, identity: Identity, name: String) -> Self {
        let exec = TerminalExec::new(home.clone(), default_registry());
        Self {
            home,
            identity,
            name,
            exec,
        }
    }
}

/// How one connection ended.
enum Ended {
    /// Lost; worth retrying.
    Lost(String),
    /// Refused; retrying would not help.
    Refused(String),
}

/// Connects, serves, reconnects with back-off, until interrupted or refused.
pub(crate) async fn serve(node: Node, url: &str, token: &str) -> CliResult {
    let node = Arc::new(node);
    eprintln!(
        "node {} (device {}) serving {url}",
        node.name,
        node.identity.id()
    );
    let mut backoff = Duration::from_secs(1);
    loop {
        let started = std::time::Instant::now();
        let ended = tokio::select! {
            ended = connection(&node, url, token) => ended,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        match ended {
            Ended::Refused(why) => return Err(CliError::failed("node run", why)),
            Ended::Lost(why) => {
                if started.elapsed() > MAX_BACKOFF {
                    backoff = Duration::from_secs(1);
                }
                eprintln!("{why}; reconnecting in {} s", backoff.as_secs());
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// One connection: the handshake, then invocations until it ends.
async fn connection(node: &Arc<Node>, url: &str, token: &str) -> Ended {
    let (ws, _) = match tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async(url),
    )
    .await
    {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => return Ended::Lost(format!("cannot reach {url}: {e}")),
        Err(_) => return Ended::Lost(format!("{url} did not answer within 10 s")),
    };
    let (mut sink, mut stream) = ws.split();
    let mut next_frame = async || loop {
        match stream.next().await {
            Some(Ok(Message::Text(text))) => {
                return serde_json::from_str::<Value>(text.as_str()).ok();
            }
            Some(Ok(Message::Close(_)) | Err(_)) | None => return None,
            Some(Ok(_)) => {}
        }
    };
    let Some(challenge) = next_frame().await else {
        return Ended::Lost("the gateway closed before its challenge".into());
    };
    let nonce = challenge
        .pointer("/payload/nonce")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let ts = challenge
        .pointer("/payload/ts")
        .and_then(Value::as_u64)
        .unwrap_or_else(lurkbot_core::now_ms);
    let params = connect_params(&node.identity, (&nonce, ts), &node.name, token, COMMANDS);
    let connect = protocol::request("connect", method::CONNECT, params);
    if sink
        .send(Message::Text(connect.to_string().into()))
        .await
        .is_err()
    {
        return Ended::Lost("the connection failed during connect".into());
    }
    loop {
        let Some(frame) = next_frame().await else {
            return Ended::Lost("the gateway closed the connection during connect".into());
        };
        if frame["type"] != "res" {
            continue;
        }
        if frame["ok"] == true {
            break;
        }
        let text = |k: &str| {
            frame
                .pointer(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        return Ended::Refused(format!(
            "the gateway refused this node ({}): {}",
            text("/error/code"),
            text("/error/message")
        ));
    }
    eprintln!(
        "connected; if this device is new, the gateway's owner approves it with: lurkbot devices approve {}",
        node.identity.id()
    );
    let (results, mut to_send) = mpsc::unbounded_channel::<Value>();
    let mut sent = 0u64;
    loop {
        tokio::select! {
            frame = next_frame() => {
                let Some(frame) = frame else {
                    return Ended::Lost("the gateway closed the connection".into());
                };
                if frame["type"] == "event" && frame["event"] == INVOKE_REQUEST {
                    let Some(request) = InvokeRequest::parse(&frame["payload"]) else { continue };
                    let node = node.clone();
                    let results = results.clone();
                    tokio::spawn(async move {
                        let outcome = invoke(&node, &request).await;
                        let _ = results.send(outcome.result_params(&request));
                    });
                }
            }
            Some(params) = to_send.recv() => {
                sent += 1;
                let frame = protocol::request(&format!("r{sent}"), INVOKE_RESULT, params);
                if sink.send(Message::Text(frame.to_string().into())).await.is_err() {
                    return Ended::Lost("the connection failed while answering".into());
                }
            }
        }
    }
}

/// Carries out one invocation, logged in `logs/node.jsonl`.
async fn invoke(node: &Node, request: &InvokeRequest) -> InvokeOutcome {
    let (outcome, line) = match request.command.as_str() {
        "system.run" => run(node, request).await,
        "system.which" => (which(node, &request.params), None),
        "device.info" => (info(node), None),
        other => (
            InvokeOutcome::Err {
                code: "INVALID_REQUEST".into(),
                message: format!("this node offers {}, not '{other}'", COMMANDS.join(", ")),
            },
            None,
        ),
    };
    let (result, code) = match &outcome {
        InvokeOutcome::Ok(_) => ("ok", None),
        InvokeOutcome::Err { code, .. } => ("failed", Some(code.as_str())),
    };
    let record = json!({"ts_ms": lurkbot_core::now_ms(), "id": request.id,
        "command": request.command, "line": line.as_deref().map(lurkbot_term::mask_command_text),
        "outcome": result, "code": code});
    let path = node.home.join(layout::LOGS).join(NODE_LOG);
    if let Err(e) = lurkbot_core::append_private_line(&path, &record.to_string()) {
        eprintln!("cannot append to logs/{NODE_LOG}: {e}");
    }
    outcome
}

/// `system.run`: one terminal command, held by this home's approvals unless approved.
async fn run(node: &Node, request: &InvokeRequest) -> (InvokeOutcome, Option<String>) {
    let p = &request.params;
    let line = match p.get("command") {
        Some(Value::String(line)) => line.clone(),
        Some(Value::Array(argv)) => argv
            .iter()
            .filter_map(Value::as_str)
            .map(quote)
            .collect::<Vec<_>>()
            .join(" "),
        _ => {
            let e = InvokeOutcome::Err {
                code: "INVALID_REQUEST".into(),
                message: "system.run needs command: a terminal command line, e.g. \"help\"".into(),
            };
            return (e, None);
        }
    };
    let config = Config::load(&node.home.join(layout::CONFIG)).unwrap_or_default();
    let approvals = Approvals::new(&node.home, config.approvals.clone());
    let held = approvals.check(
        "node",
        &request.id,
        "terminal_exec",
        &json!({"command": line}),
    );
    if let Some(held) = held
        && p.get("approved") != Some(&Value::Bool(true))
    {
        let e = InvokeOutcome::Err {
            code: "APPROVAL_REQUIRED".into(),
            message: format!(
                "this node's approvals hold `{}` ({}); the gateway must ask its human first. Nothing ran.",
                lurkbot_term::mask_command_text(&line),
                held.reason
            ),
        };
        return (e, Some(line));
    }
    let mut exec = ExecRequest::new(line.clone());
    exec.stdin = p.get("stdin").and_then(Value::as_str).map(str::to_string);
    exec.timeout_ms = p.get("timeoutMs").and_then(Value::as_u64);
    let envelope = node.exec.run(exec).await;
    let payload = json!({
        "success": envelope.exit_code == 0,
        "exitCode": envelope.exit_code,
        "timedOut": envelope.exit_code == 124,
        "stdout": envelope.stdout,
        "stderr": envelope.stderr,
        "errorCode": envelope.error_code,
        "result": envelope.result,
    });
    (InvokeOutcome::Ok(payload), Some(line))
}

/// A word as the terminal's parser reads it back.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        return word.to_string();
    }
    format!("\"{}\"", word.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `system.which {bins}`: the names that are terminal commands here.
fn which(node: &Node, params: &Value) -> InvokeOutcome {
    let names: Vec<&str> = node.exec.registry().specs().map(|s| s.name).collect();
    let found: serde_json::Map<String, Value> = params
        .get("bins")
        .and_then(Value::as_array)
        .map(|bins| {
            bins.iter()
                .filter_map(Value::as_str)
                .filter(|b| names.contains(b))
                .map(|b| (b.to_string(), json!(format!("terminal_exec {b}"))))
                .collect()
        })
        .unwrap_or_default();
    InvokeOutcome::Ok(json!({"bins": found}))
}

/// `device.info`.
fn info(node: &Node) -> InvokeOutcome {
    let names: Vec<&str> = node.exec.registry().specs().map(|s| s.name).collect();
    InvokeOutcome::Ok(json!({
        "displayName": node.name, "platform": std::env::consts::OS,
        "arch": std::env::consts::ARCH, "version": env!("CARGO_PKG_VERSION"),
        "deviceId": node.identity.id(), "terminalCommands": names,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_words_read_back_as_given() {
        let words = ["zip", "list", "--in", "a b.zip", "it's", "\"q\"", "x\\y"];
        let line = words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        assert_eq!(lurkbot_term::parse_command(&line).unwrap(), words);
        assert_eq!(from_hex(&to_hex(&[0, 15, 255])), Some(vec![0, 15, 255]));
        assert_eq!(from_hex("abc"), None);
    }
}
