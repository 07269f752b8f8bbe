//! A check asked before every tool call, from outside the agent: a plugin's `before_tool` hook
//! (ARCHITECTURE.md §7d). A refusal reaches the model as the tool's error; an allow is not a
//! grant — the gate, approvals and the protection model still decide after it.

use serde_json::Value;

use crate::BoxFuture;

/// Asked before each tool call of session `session`: `Err(reason)` refuses it.
pub trait ToolHook: Send + Sync {
    /// Whether `tool` may run with `args`.
    fn before_tool<'a>(
        &'a self,
        session: &'a str,
        tool: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<(), String>>;
}
