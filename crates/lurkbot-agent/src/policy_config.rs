//! The tool policy of one run, read from `config.toml`: the nine layers of ARCHITECTURE.md §5 in order —
//! `[tools] profile`, `[tools.by_provider.<p>] profile`, `[tools]` allow/deny,
//! `[tools.by_provider.<p>]` allow/deny, `[agents.<id>.tools]`, `[agents.<id>.tools.by_provider.<p>]`,
//! `[tools.group]` (group and channel sessions), sandbox, sub-agent.
//!
//! `<p>` is looked up as the full `provider/model` first, then as the provider alone, so a rule
//! can target one model. Profiles at any layer narrow like allow lists.

use lurkbot_core::{Config, Home, SandboxMode, SessionKey, ToolLayerConfig};

use crate::policy::{Layer, Policy};

/// The policy for `session` when `model` (`provider/model`) answers. A group or topic, and
/// the direct messages of anyone but the owner's own accounts, get the group layer: what
/// someone else writes never runs with the owner's full tools (ARCHITECTURE.md §4.6, §5.1).
pub fn policy_for(home: &Home, config: &Config, session: &SessionKey, model: &str) -> Policy {
    let agent_id = session.agent_id();
    let key = session.as_str();
    let group = crate::gate::is_third_party(home, config, session);
    let subagent = key.contains(":subagent:");
    let tools = &config.tools;
    let agent = config.agents.get(agent_id);
    let mut layers = Vec::new();
    push(&mut layers, "tools".into(), &tools_layer(config));
    push_provider(&mut layers, "tools", &tools.by_provider, model);
    if let Some(agent) = agent {
        let source = format!("agents.{agent_id}.tools");
        push(&mut layers, source.clone(), &agent.tools);
        push_provider(&mut layers, &source, &agent.tools.by_provider, model);
    }
    if group {
        push(&mut layers, "tools.group".into(), &tools.group);
    }
    let sandbox_mode = agent.and_then(|a| a.sandbox).unwrap_or(tools.sandbox);
    let main = key == format!("agent:{agent_id}:main");
    let sandbox = match sandbox_mode {
        SandboxMode::Off => false,
        SandboxMode::NonMain => !main,
        SandboxMode::All => true,
    };
    Policy {
        layers,
        group,
        sandbox,
        subagent,
        subagent_may_spawn: config.agent.subagents.max_depth > 1,
    }
}

/// `[tools]` profile/allow/deny as a layer (its `by_provider` is handled separately).
fn tools_layer(config: &Config) -> ToolLayerConfig {
    ToolLayerConfig {
        profile: config.tools.profile.clone(),
        allow: config.tools.allow.clone(),
        deny: config.tools.deny.clone(),
        by_provider: Default::default(),
    }
}

fn push(layers: &mut Vec<Layer>, source: String, config: &ToolLayerConfig) {
    if config.profile.is_none() && config.allow.is_empty() && config.deny.is_empty() {
        return;
    }
    layers.push(Layer {
        source,
        profile: config.profile.clone(),
        allow: config.allow.clone(),
        deny: config.deny.clone(),
    });
}

fn push_provider(
    layers: &mut Vec<Layer>,
    source: &str,
    by_provider: &std::collections::BTreeMap<String, ToolLayerConfig>,
    model: &str,
) {
    let provider = model.split('/').next().unwrap_or(model);
    let found = by_provider
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(model))
        .or_else(|| {
            by_provider
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(provider))
        });
    if let Some((name, config)) = found {
        push(layers, format!("{source}.by_provider.{name}"), config);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const ALL: &[&str] = &[
        "terminal_exec",
        "read",
        "write",
        "edit",
        "apply_patch",
        "web_fetch",
        "session_status",
        "sessions_list",
        "sessions_history",
    ];

    fn offered(toml: &str, session: &str, model: &str) -> Vec<String> {
        let config = Config::parse(Path::new("config.toml"), toml).expect("config parses");
        let session = SessionKey::parse(session).expect("key");
        let dir = tempfile::tempdir().expect("temp dir");
        let home = Home::open(dir.path()).expect("home");
        policy_for(&home, &config, &session, model)
            .filter(ALL.iter().copied())
            .expect("known profiles")
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn provider_and_model_layers_narrow_the_global_one() {
        let toml = "[tools]\nprofile = \"coding\"\ndeny = [\"edit\"]\n\
                    [tools.by_provider.openai]\ndeny = [\"terminal_exec\"]\n\
                    [tools.by_provider.\"openai/tiny\"]\nprofile = \"minimal\"\n";
        assert_eq!(
            offered(toml, "agent:main:main", "anthropic/claude"),
            [
                "terminal_exec",
                "read",
                "write",
                "apply_patch",
                "session_status",
                "sessions_list",
                "sessions_history"
            ]
        );
        let openai = offered(toml, "agent:main:main", "openai/gpt-4o");
        assert!(!openai.contains(&"terminal_exec".to_string()) && openai.contains(&"read".into()));
        // The model-specific table wins over the provider one.
        assert_eq!(
            offered(toml, "agent:main:main", "OpenAI/tiny"),
            ["session_status"]
        );
    }

    #[test]
    fn agent_group_and_sandbox_layers() {
        let toml = "[agents.ops.tools]\nallow = [\"read\", \"write\", \"web_*\"]\n\
                    [agents.ops.tools.by_provider.openai]\ndeny = [\"WRITE\"]\n\
                    [tools.group]\ndeny = [\"web_fetch\"]\n\
                    [agents.ops]\nsandbox = \"non-main\"\n";
        assert_eq!(
            offered(toml, "agent:ops:main", "anthropic/x"),
            ["read", "write", "web_fetch"]
        );
        assert_eq!(
            offered(toml, "agent:ops:main", "openai/x"),
            ["read", "web_fetch"]
        );
        // non-main sandbox: no writes in a DM session of the same agent; a DM of someone who
        // is not the owner also gets the group layer (no web_fetch here).
        assert_eq!(
            offered(toml, "agent:ops:dm:cli:bob", "anthropic/x"),
            ["read", "web_fetch"]
        );
        assert_eq!(
            offered(toml, "agent:ops:dm:irc:bob", "anthropic/x"),
            ["read"]
        );
        // Group sessions: the built-in group deny list and [tools.group].
        assert_eq!(
            offered(toml, "agent:main:group:irc:#lurk", "anthropic/x"),
            [
                "read",
                "session_status",
                "sessions_list",
                "sessions_history"
            ]
        );
        // Other agents are not touched by [agents.ops].
        assert_eq!(
            offered(toml, "agent:main:main", "openai/x").len(),
            ALL.len()
        );
    }
}
