//! `canvas`: the model shows a self-contained HTML/SVG widget in the web UI's chat, keeps it on
//! the session's dashboard with `pin`, changes or removes it (ARCHITECTURE.md §5.2). Widgets
//! are kept per session ([`crate::canvas::CanvasStore`]) and announced to the attached clients
//! through the gateway; offered only while a client that can show them is attached.

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};
use crate::canvas::{CanvasStore, WidgetEdit};

/// `canvas`.
pub(crate) struct CanvasTool;

impl Tool for CanvasTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "canvas".into(),
            description: "Show an HTML/SVG widget in the user's chat (scripts run, no network, ≤256 KiB); pin keeps it on the dashboard.".into(),
            parameters: schema(r#"{"type": "object", "properties": {
                "action": {"type": "string", "enum": ["show", "update", "hide", "list"]},
                "id": {"type": "string"},
                "title": {"type": "string"},
                "html": {"type": "string"},
                "pin": {"type": "boolean"}},
                "required": ["action"]}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(gateway) = ctx.runtime.and_then(|r| r.gateway()) else {
                return ToolOutput::error("canvas works only in a session of a running gateway");
            };
            let action = match string_arg(args, "action") {
                Ok(a) => a,
                Err(e) => return e,
            };
            let text = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_string);
            let edit = WidgetEdit {
                id: text("id"),
                title: text("title"),
                html: text("html"),
                pin: args.get("pin").and_then(Value::as_bool),
            };
            let store = CanvasStore::open(ctx.home, ctx.session);
            let changed = match action {
                "list" => {
                    let list: Vec<Value> = store
                        .list()
                        .iter()
                        .map(|w| json!({"id": w.id, "title": w.title, "pinned": w.pinned, "bytes": w.html.len()}))
                        .collect();
                    return ToolOutput::ok(json!(list).to_string());
                }
                "show" => store.show(edit),
                "update" => store.update(edit),
                "hide" => store.hide(edit.id),
                other => Err(format!(
                    "unknown action '{other}' (show, update, hide, list)"
                )),
            };
            match changed {
                Ok(change) => {
                    let answer =
                        json!({"action": change.action, "id": change.id, "pinned": change.pinned});
                    gateway.canvas_changed(change);
                    ToolOutput::ok(answer.to_string())
                }
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}
