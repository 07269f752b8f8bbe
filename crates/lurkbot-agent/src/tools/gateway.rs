//! `gateway`: the agent reads the gateway it runs in — its state and its settings, secrets
//! masked — and proposes a change (ARCHITECTURE.md §5.2). A change goes through the gate as the
//! model's act ([`crate::gate::Act::Settings`]): only the keys of
//! [`MODEL_SETTINGS`](crate::gate::MODEL_SETTINGS), each time with a human's approval; it is
//! validated, written atomically and reloaded by the gateway ([`crate::GatewayControl`]).
//! Offered only in a gateway's sessions.

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};
use crate::gate::{Asker, MODEL_SETTINGS};

/// `gateway`.
pub(crate) struct GatewayTool;

impl Tool for GatewayTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "gateway".into(),
            description: "Gateway status and settings (secrets masked). config.patch {patch:{section:{key:value}}} needs the owner's approval.".into(),
            parameters: schema(r#"{"type": "object", "properties": {
                "action": {"type": "string", "enum": ["status", "config.get", "config.schema", "config.patch", "reload"]},
                "patch": {"type": "object"}},
                "required": ["action"]}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(gateway) = ctx.runtime.and_then(|r| r.gateway()) else {
                return ToolOutput::error(
                    "gateway works only in a session of a running gateway (`lurkbot gateway`)",
                );
            };
            let action = match string_arg(args, "action") {
                Ok(a) => a,
                Err(e) => return e,
            };
            let answer = |v: Value| ToolOutput::ok(v.to_string());
            match action {
                "status" => answer(gateway.status().await),
                "config.get" => match serde_json::to_value(ctx.config) {
                    Ok(v) => answer(json!({
                        "path": ctx.home.join("config.toml").display().to_string(),
                        "config": lurkbot_core::mask_secret_values(v),
                    })),
                    Err(e) => ToolOutput::error(format!("the settings could not be read: {e}")),
                },
                "config.schema" => answer(changeable()),
                "config.patch" => match args.get("patch") {
                    Some(patch) => match gateway.patch(ctx.session, patch, Asker::Model).await {
                        Ok(done) => answer(done),
                        Err(e) => ToolOutput::error(e),
                    },
                    None => ToolOutput::error(
                        "config.patch needs patch, such as {\"heartbeat\": {\"every\": \"10m\"}}",
                    ),
                },
                "reload" => match gateway.reload() {
                    Ok(plan) => answer(plan),
                    Err(e) => ToolOutput::error(e),
                },
                other => ToolOutput::error(format!(
                    "unknown action '{other}' (status, config.get, config.schema, config.patch, reload)"
                )),
            }
        })
    }
}

/// The keys a model may change, each with its description, type and default from the config
/// schema; every other key is the owner's.
fn changeable() -> Value {
    json!({
        "changeable": lurkbot_core::keys_schema(MODEL_SETTINGS),
        "everythingElse": "the owner's: refused to config.patch",
    })
}

#[cfg(test)]
mod tests {
    use super::changeable;

    #[test]
    fn the_schema_describes_every_key_a_model_may_change() {
        let v = changeable();
        let keys = v["changeable"].as_object().unwrap();
        assert_eq!(keys.len(), crate::gate::MODEL_SETTINGS.len());
        for (key, entry) in keys {
            assert!(
                entry.get("description").is_some(),
                "{key} has no description: {entry}"
            );
        }
        assert!(v.to_string().len() < 4000, "{}", v.to_string().len());
    }
}
