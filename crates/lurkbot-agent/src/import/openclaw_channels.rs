//! OpenClaw's `channels` in `openclaw.json`: WhatsApp's access settings carry over to
//! `[channels.whatsapp]` (its linked device must be linked again: its keys are OpenClaw's);
//! every other channel is named for the owner to set by hand.

use serde_json::Value;

use super::toml_values::{toml_list, toml_string};
use super::{Action, ImportPlan};

/// Maps `config.channels` into `plan`.
pub(super) fn channels(plan: &mut ImportPlan, config: &Value) {
    for (name, settings) in config
        .get("channels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if name == "whatsapp" {
            whatsapp(plan, settings);
        } else {
            plan.unmapped(
                format!("channels.{name}"),
                "channel settings are not imported: set [channels.NAME] in config.toml and its variables in .env (README, 'Channels')",
            );
        }
    }
}

fn set(plan: &mut ImportPlan, key: &str, value: String) {
    plan.actions.push(Action::Setting {
        key: format!("channels.whatsapp.{key}"),
        value,
    });
}

fn whatsapp(plan: &mut ImportPlan, settings: &Value) {
    // OpenClaw's WhatsApp is a linked device (Baileys), as LurkBot's default mode is.
    set(plan, "mode", toml_string("linked"));
    if settings.get("enabled") == Some(&Value::Bool(false)) {
        set(plan, "enabled", "false".into());
    }
    let policy = settings.get("dmPolicy").and_then(Value::as_str);
    let allow: Vec<&str> = settings
        .get("allowFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let anyone = allow.contains(&"*");
    match policy {
        Some(p @ ("pairing" | "allowlist" | "open" | "disabled")) => {
            set(plan, "dm_policy", toml_string(p));
        }
        Some(other) => plan.unmapped(
            format!("channels.whatsapp.dmPolicy: {other}"),
            "LurkBot's dm_policy is pairing, allowlist, open or disabled",
        ),
        None if anyone => set(plan, "dm_policy", toml_string("open")),
        None => {}
    }
    // Numbers as WhatsApp writes them: digits with the country code, no `+`.
    let numbers: Vec<String> = allow
        .iter()
        .filter(|a| **a != "*")
        .map(|a| a.chars().filter(char::is_ascii_digit).collect::<String>())
        .filter(|n| !n.is_empty())
        .collect();
    if !numbers.is_empty() {
        set(plan, "allow_from", toml_list(&numbers));
    }
    let groups = settings.get("groups").and_then(Value::as_object);
    if let Some(mention) = groups
        .and_then(|g| g.get("*"))
        .and_then(|all| all.get("requireMention"))
        .and_then(Value::as_bool)
    {
        set(plan, "require_mention", mention.to_string());
    }
    let named: Vec<&String> = groups
        .into_iter()
        .flatten()
        .map(|(id, _)| id)
        .filter(|id| *id != "*")
        .collect();
    if !named.is_empty() {
        plan.unmapped(
            "channels.whatsapp.groups (by id)",
            format!(
                "LurkBot answers any group where an allowed sender mentions it; route a group to an agent with [[bindings]] group = \"<id>\" ({} named)",
                named.len()
            ),
        );
    }
    if settings.get("groupPolicy").is_some() || settings.get("groupAllowFrom").is_some() {
        plan.unmapped(
            "channels.whatsapp.groupPolicy / groupAllowFrom",
            "in LurkBot's groups only the owner, approved (paired) senders, or anyone under dm_policy = \"open\" are answered, and only when they mention it (require_mention)",
        );
    }
    plan.unmapped(
        "channels.whatsapp (the linked device)",
        "OpenClaw's device keys stay OpenClaw's: link LurkBot again with 'lurkbot channels login whatsapp' (a QR code, or --phone for a pairing code)",
    );
}
