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
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

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
        let policy = crate::policy_for(&self.config, &self.session, "");
        SERVED
            .iter()
            .filter(|name| policy.allows(name).unwrap_or(false))
            .filter_map(|name| self.tools.get(name).map(|t| t.spec()))
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
            runtime: None,
        };
        let mut output = tool.run(&ctx, args).await;
        let redactor = lurkbot_term::Redactor::new(Secrets::load(&self.home).redaction_values());
        output.text = crate::untrusted::wrap(name, &redactor.text(&output.text));
        output
    }
}

impl ServerHandler for LurkBotServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("lurkbot", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "LurkBot's terminal_exec: a whitelisted pseudo-terminal (no shell); run `help` to list its commands. Every call is audited.".into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .offered()
            .into_iter()
            .map(|spec| {
                let schema = match spec.parameters {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                Tool::new(spec.name, spec.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let output = self.call(&request.name, &args).await;
        let content = vec![ContentBlock::text(output.text)];
        let result = if output.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        Ok(result.into())
    }
}

/// Serves on stdin/stdout until the client closes the connection.
///
/// # Errors
/// The MCP handshake or the transport failing.
pub async fn serve_stdio(home: Home, config: Config) -> Result<(), String> {
    let server = LurkBotServer::new(home, config)?;
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("MCP connection failed: {e}"))?;
    Ok(())
}
