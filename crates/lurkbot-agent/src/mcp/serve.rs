//! `lurkbot mcp serve`: LurkBot as an MCP server on stdio, so any MCP client (Claude Code, Codex,
//! an IDE) gets LurkBot's safe terminal. Its tools are `terminal_exec` and the read-only file
//! tool `read`, offered and run as they are for the session `agent:main:dm:mcp:client`: the
//! same policy (a tool the policy denies is neither listed nor run), the same approvals — a call
//! that needs a human is refused with a message saying a human must allow it in LurkBot, since
//! nobody can answer on this connection — the same audit log, redaction of secret values and
//! untrusted labelling.

use std::sync::Arc;

use lurkbot_core::{Config, Home, Secrets, SessionKey};
use lurkbot_term::TerminalExec;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::approvals::Approvals;
use crate::tools::{ToolBox, ToolCtx, ToolOutput};
use crate::transcript::Sessions;

/// The tools `lurkbot mcp serve` exposes (before the policy).
pub const SERVED: &[&str] = &["terminal_exec", "read"];
/// The session whose policy, approvals and audit the served calls use.
pub const SESSION: &str = "agent:main:dm:mcp:client";

/// The handler behind `lurkbot mcp serve`.
pub struct LurkBotServer {
    home: Home,
    config: Config,
    session: SessionKey,
    tools: ToolBox,
    exec: Arc<TerminalExec>,
    approvals: Approvals,
}

impl LurkBotServer {
    /// A server for `home` with its settings.
    ///
    /// # Errors
    /// The session key failing to parse (never for the built-in one).
    pub fn new(home: Home, config: Config) -> Result<Self, String> {
        let session = SessionKey::parse(SESSION).map_err(|e| e.to_string())?;
        Ok(Self {
            exec: Arc::new(TerminalExec::new(
                home.clone(),
                lurkbot_term::default_registry(),
            )),
            approvals: Approvals::new(&home, config.approvals.clone()),
            tools: ToolBox::builtin(),
            home,
            config,
            session,
        })
    }

    /// The served tools the policy allows, in [`SERVED`] order.
    pub fn offered(&self) -> Vec<lurkbot_llm::ToolSpec> {
        let policy = crate::policy_for(&self.home, &self.config, &self.session, "");
        SERVED
            .iter()
            .filter(|name| policy.allows(name).unwrap_or(false))
            .filter_map(|name| self.tools.spec(name).cloned())
            .collect()
    }

    /// Runs one call as the module says; the text is redacted and labelled untrusted.
    pub async fn call(&self, name: &str, args: &Value) -> ToolOutput {
        if !self.offered().iter().any(|t| t.name == name) {
            return ToolOutput::error(format!(
                "tool '{name}' is not available: LurkBot serves {} here, as its tool policy allows",
                SERVED.join(" and ")
            ));
        }
        let Some(tool) = self.tools.get(name) else {
            return ToolOutput::error(format!("tool '{name}' does not exist"));
        };
        let id = lurkbot_core::random_hex(8);
        if let Some(request) = self.approvals.check(self.session.as_str(), &id, name, args) {
            return ToolOutput::error(format!(
                "this call needs a human's approval in LurkBot ({}), and nobody can approve over MCP. A human must allow it in LurkBot: run it from `lurkbot chat` or the web UI and choose allow-always, or change [approvals] in config.toml.",
                request.reason
            ));
        }
        let sessions = Sessions::open(&self.home, self.session.agent_id());
        let entry = match sessions.get_or_create(&self.session) {
            Ok(entry) => entry,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let ctx = ToolCtx {
            home: &self.home,
            session: &self.session,
            entry: &entry,
            sessions: &sessions,
            exec: &self.exec,
            config: &self.config,
            model: "",
            runtime: None,
            others: false,
        };
        let mut output = tool.run(&ctx, args).await;
        let redactor = lurkbot_term::Redactor::new(Secrets::load(&self.home).redaction_values());
        output.text = crate::untrusted::wrap(name, &redactor.text(&output.text));
        output
    }
}

impl LurkBotServer {
    /// The answer to one JSON-RPC message from the client; `None` for notifications and
    /// answers (LurkBot sends the client no requests).
    pub async fn answer(&self, message: &Value) -> Option<Value> {
        let id = message.get("id")?.clone();
        let method = message.get("method")?.as_str().unwrap_or_default();
        let params = &message["params"];
        let result = match method {
            "initialize" => {
                let asked = params["protocolVersion"].as_str().unwrap_or_default();
                let version = if super::rpc::SUPPORTED_VERSIONS.contains(&asked) {
                    asked
                } else {
                    super::rpc::PROTOCOL_VERSION
                };
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "lurkbot", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "LurkBot's terminal_exec: a whitelisted pseudo-terminal (no shell); run `help` to list its commands. Every call is audited."
                })
            }
            "ping" => json!({}),
            "tools/list" => {
                let tools: Vec<Value> = self
                    .offered()
                    .into_iter()
                    .map(|spec| {
                        json!({
                            "name": spec.name,
                            "description": spec.description,
                            "inputSchema": spec.parameters,
                        })
                    })
                    .collect();
                json!({"tools": tools})
            }
            "tools/call" => {
                let Some(name) = params["name"].as_str() else {
                    return Some(refusal(id, -32602, "tools/call needs params.name"));
                };
                let args = match &params["arguments"] {
                    Value::Object(_) => params["arguments"].clone(),
                    _ => json!({}),
                };
                let output = self.call(name, &args).await;
                json!({
                    "content": [{"type": "text", "text": output.text}],
                    "isError": output.is_error,
                })
            }
            other => {
                return Some(refusal(
                    id,
                    -32601,
                    &format!("method '{other}' is not served by LurkBot"),
                ));
            }
        };
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

/// A JSON-RPC error answer.
fn refusal(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Serves on stdin/stdout until the client closes the connection: one JSON message per line
/// each way; requests are answered concurrently (a long `terminal_exec` does not hold a
/// `ping`).
///
/// # Errors
/// Reading stdin failing, or a line over 16 MiB.
pub async fn serve_stdio(home: Home, config: Config) -> Result<(), String> {
    let server = Arc::new(LurkBotServer::new(home, config)?);
    let (out, mut answers) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(answer) = answers.recv().await {
            let mut line = answer.to_string();
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let mut reader = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    let mut calls = tokio::task::JoinSet::new();
    let ended = loop {
        line.clear();
        let read = (&mut reader)
            .take(super::rpc::MAX_MESSAGE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => break Ok(()),
            Ok(n) if n > super::rpc::MAX_MESSAGE => {
                break Err("a message over 16 MiB: the connection is closed".to_string());
            }
            Ok(_) => {}
            Err(e) => break Err(format!("MCP connection failed: {e}")),
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Value = match serde_json::from_slice(&line) {
            Ok(m) => m,
            Err(e) => {
                let _ = out.send(refusal(Value::Null, -32700, &format!("not JSON: {e}")));
                continue;
            }
        };
        let (server, out) = (server.clone(), out.clone());
        calls.spawn(async move {
            if let Some(answer) = server.answer(&message).await {
                let _ = out.send(answer);
            }
        });
        while calls.try_join_next().is_some() {}
    };
    // Calls still running finish and are answered before the output closes.
    while calls.join_next().await.is_some() {}
    drop(out);
    let _ = writer.await;
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn refusals_and_the_version_answer() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let server = LurkBotServer::new(home, Config::default()).unwrap_or_else(|e| panic!("{e}"));
        let answer = |message: Value| {
            let server = &server;
            async move { server.answer(&message).await }
        };
        // A method LurkBot does not serve, and a call without a tool name.
        let unknown = answer(json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list"})).await;
        assert_eq!(
            unknown.as_ref().map(|a| &a["error"]["code"]),
            Some(&json!(-32601))
        );
        let nameless =
            answer(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}})).await;
        assert_eq!(
            nameless.as_ref().map(|a| &a["error"]["code"]),
            Some(&json!(-32602))
        );
        // Notifications are not answered.
        let note = answer(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert!(note.is_none());
        // A version LurkBot speaks is echoed; another gets LurkBot's own.
        for (asked, given) in [("2025-03-26", "2025-03-26"), ("1999-01-01", "2025-06-18")] {
            let init = answer(json!({"jsonrpc": "2.0", "id": 3, "method": "initialize",
                "params": {"protocolVersion": asked}}))
            .await
            .unwrap_or_default();
            assert_eq!(init["result"]["protocolVersion"], given, "{init}");
            assert_eq!(init["id"], 3);
        }
    }
}
