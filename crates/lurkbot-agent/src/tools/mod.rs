//! The tools the model may call. Each tool is a [`Tool`]; [`ToolBox`] holds them by name and
//! hands the model the specs of those the policy allows.

pub(crate) mod browser;
mod canvas;
mod cron;
mod describe;
mod exec;
mod fs;
mod gateway;
mod image;
mod memory;
mod message;
mod nodes;
mod patch;
mod send;
mod sessions;
mod spawn;
mod tts;
mod web;

use std::future::Future;
use std::pin::Pin;

use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_llm::ToolSpec;
use lurkbot_term::TerminalExec;
use serde_json::Value;

use crate::transcript::{SessionEntry, Sessions};

pub(crate) use cron::CronTool;
pub(crate) use exec::TerminalExecTool;
pub(crate) use fs::{EditTool, ReadTool, WriteTool};
pub(crate) use image::ImageTool;
pub(crate) use memory::{MemoryGetTool, MemorySearchTool};
pub(crate) use message::MessageTool;
pub(crate) use patch::ApplyPatchTool;
pub(crate) use send::{AgentsListTool, SessionsSendTool};
pub(crate) use sessions::{SessionStatusTool, SessionsHistoryTool, SessionsListTool};
pub(crate) use spawn::SessionsSpawnTool;
pub(crate) use web::{WebFetchTool, WebSearchTool};

/// What a tool returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text for the model.
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// Images shown to the model with the result.
    pub images: Vec<lurkbot_llm::ImagePart>,
    /// A voice note the call made (its file name under `workspace/audio/`), delivered with
    /// the answer.
    pub voice: Option<String>,
}

impl ToolOutput {
    /// A success.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
            images: Vec::new(),
            voice: None,
        }
    }

    /// A failure the model should see.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            images: Vec::new(),
            voice: None,
        }
    }

    /// The same output showing `images` to the model.
    #[must_use]
    pub fn with_images(mut self, images: Vec<lurkbot_llm::ImagePart>) -> Self {
        self.images = images;
        self
    }

    /// The same output carrying the voice note `name`.
    #[must_use]
    pub fn with_voice(mut self, name: String) -> Self {
        self.voice = Some(name);
        self
    }
}

/// What a tool may use.
pub struct ToolCtx<'a> {
    /// The home.
    pub home: &'a Home,
    /// The session.
    pub session: &'a SessionKey,
    /// Its index entry.
    pub entry: &'a SessionEntry,
    /// The session store.
    pub sessions: &'a Sessions,
    /// The pseudo-terminal.
    pub exec: &'a TerminalExec,
    /// The settings.
    pub config: &'a Config,
    /// The model of the turn (`provider/model`).
    pub model: &'a str,
    /// Who runs other sessions and delivers messages, when there is one.
    pub runtime: Option<&'a std::sync::Arc<dyn crate::runtime::Runtime>>,
    /// The turn acts on someone other than the owner's words (a group, a third party's
    /// messages, an auto-forwarded line): the owner's private memory and other sessions are
    /// out of its reach (ARCHITECTURE.md §4.6, §5.1).
    pub others: bool,
}

impl<'a> ToolCtx<'a> {
    /// The runtime, or the error output a tool gives without one.
    pub(crate) fn runtime(
        &self,
        tool: &str,
    ) -> Result<&'a std::sync::Arc<dyn crate::runtime::Runtime>, ToolOutput> {
        self.runtime.ok_or_else(|| {
            ToolOutput::error(format!(
                "{tool} needs a running session host (the gateway, or `lurkbot agent`); it is not available here"
            ))
        })
    }
}

/// A boxed tool future.
pub(crate) type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// One tool.
pub trait Tool: Send + Sync {
    /// Name, description and argument schema.
    fn spec(&self) -> ToolSpec;
    /// Runs one call.
    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a>;
    /// Whether this call only reads (running it twice changes nothing a user would see): a
    /// call of it cut by a crash is run again when the turn resumes; any other is answered
    /// "interrupted by a restart; its effect is unknown" (ARCHITECTURE.md §6.3).
    fn side_effect_free(&self, _args: &Value) -> bool {
        false
    }
}

/// The tools by name, with their specs (constant per tool) made once rather than on every
/// lookup: a turn looks tools up by name several times per step. The built-in box is made once
/// per process and shared by every agent (a gateway holds dozens).
#[derive(Clone)]
pub struct ToolBox {
    shared: std::sync::Arc<Registered>,
}

/// The tools and their specs, in registration order.
struct Registered {
    tools: Vec<Box<dyn Tool>>,
    specs: Vec<std::sync::Arc<ToolSpec>>,
}

impl ToolBox {
    /// Every built-in tool.
    pub fn builtin() -> Self {
        static BUILTIN: std::sync::LazyLock<std::sync::Arc<Registered>> =
            std::sync::LazyLock::new(|| std::sync::Arc::new(Registered::new(builtin_tools())));
        Self {
            shared: std::sync::Arc::clone(&BUILTIN),
        }
    }

    /// Every tool's spec, in registration order (shared: offering one to a turn copies nothing).
    pub fn specs(&self) -> &[std::sync::Arc<ToolSpec>] {
        &self.shared.specs
    }

    /// The tool called `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.index(name)
            .and_then(|i| self.shared.tools.get(i))
            .map(|t| t.as_ref())
    }

    /// The spec of the tool called `name` (case-insensitive).
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.index(name)
            .and_then(|i| self.shared.specs.get(i))
            .map(|s| s.as_ref())
    }

    /// Where the tool called `name` (case-insensitive) is registered.
    fn index(&self, name: &str) -> Option<usize> {
        self.shared
            .specs
            .iter()
            .position(|s| s.name.eq_ignore_ascii_case(name))
    }
}

impl Registered {
    fn new(tools: Vec<Box<dyn Tool>>) -> Self {
        let specs = tools
            .iter()
            .map(|t| std::sync::Arc::new(t.spec()))
            .collect();
        Self { tools, specs }
    }
}

/// Every built-in tool, in the order they are offered.
fn builtin_tools() -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(TerminalExecTool),
        Box::new(ReadTool),
        Box::new(WriteTool),
        Box::new(EditTool),
        Box::new(ApplyPatchTool),
        Box::new(WebSearchTool),
        Box::new(WebFetchTool),
        Box::new(ImageTool),
        Box::new(browser::BrowserTool),
        Box::new(canvas::CanvasTool),
        Box::new(tts::TtsTool),
        Box::new(SessionStatusTool),
        Box::new(SessionsListTool),
        Box::new(SessionsHistoryTool),
        Box::new(SessionsSendTool),
        Box::new(SessionsSpawnTool),
        Box::new(AgentsListTool),
        Box::new(CronTool),
        Box::new(gateway::GatewayTool),
        Box::new(nodes::NodesTool),
        Box::new(MessageTool),
        Box::new(MemorySearchTool),
        Box::new(MemoryGetTool),
    ]
}

/// A tool's parameters from the JSON Schema written as text (an object; `null` only for text
/// that is not JSON, which the test of every built-in spec refuses). Text is a quarter of the
/// code `json!` makes for the same schema (ARCHITECTURE.md §9: the binary's budget); specs are
/// made once per process ([`ToolBox::builtin`]).
pub(crate) fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A string argument, or an error output naming it.
pub(crate) fn string_arg<'v>(args: &'v Value, name: &str) -> Result<&'v str, ToolOutput> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolOutput::error(format!("missing string argument '{name}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in tool's parameters are an object schema whose required names are among its
    /// properties: a schema written as text that does not parse would be `null` here.
    #[test]
    fn every_builtin_spec_is_an_object_schema() {
        let mut specs = ToolBox::builtin().specs().to_vec();
        specs.push(std::sync::Arc::new(browser::spec(true)));
        assert_eq!(specs.len(), 24);
        for spec in specs {
            let parameters = &spec.parameters;
            assert_eq!(parameters["type"], "object", "{}", spec.name);
            let properties = parameters["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{} has no properties", spec.name));
            for required in parameters["required"].as_array().into_iter().flatten() {
                let name = required.as_str().unwrap();
                assert!(properties.contains_key(name), "{}: {name}", spec.name);
            }
        }
        assert_eq!(schema("{\"type\": \"object\""), Value::Null);
    }
}
