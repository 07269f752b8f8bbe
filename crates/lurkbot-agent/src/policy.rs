//! The tool policy (ARCHITECTURE.md §5, OpenClaw semantics): layers that can only narrow what the model
//! is offered, in this order — profile, provider profile, global allow/deny, global
//! per-provider, agent, agent per-provider, group/channel, sandbox, sub-agent. Within a layer,
//! deny wins over allow; an empty allow list does not narrow. Names are case-insensitive;
//! `*` and `prefix_*` patterns match; `group:*` names expand.

use crate::tool_names::matches;

/// What each profile allows.
pub(crate) const PROFILES: &[(&str, &[&str])] = &[
    ("minimal", &["session_status"]),
    (
        "coding",
        &[
            "group:fs",
            "group:runtime",
            "group:sessions",
            "group:memory",
        ],
    ),
    (
        "messaging",
        &[
            "group:messaging",
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "session_status",
        ],
    ),
    ("full", &["*"]),
];

/// Never offered to sub-agents.
pub(crate) const SUBAGENT_DENY: &[&str] = &[
    "sessions_list",
    "sessions_history",
    "sessions_send",
    "sessions_spawn",
    "gateway",
    "nodes",
    "agents_list",
    "session_status",
    "cron",
    "memory_search",
    "memory_get",
];

/// Never offered in sandbox mode.
pub(crate) const SANDBOX_DENY: &[&str] = &[
    "terminal_exec",
    "write",
    "edit",
    "apply_patch",
    // MCP servers and Chromium run outside any sandbox.
    "group:plugins",
    "browser",
    // The settings are the owner's; a sandboxed session proposes no change to them.
    "gateway",
    // Commands on other machines.
    "nodes",
];

/// Never offered in group chats.
pub(crate) const GROUP_DENY: &[&str] = &[
    "terminal_exec",
    "write",
    "edit",
    "apply_patch",
    "sessions_spawn",
    "cron",
    // The owner's memory (MEMORY.md, memory/*.md) never reaches a group (ARCHITECTURE.md §4.6).
    "memory_search",
    "memory_get",
    // MCP tools act with the owner's rights outside LurkBot's confinement.
    "group:plugins",
    // The browser's profile holds the owner's logins.
    "browser",
    // The gateway's settings and state are the owner's.
    "gateway",
    // The owner's other machines.
    "nodes",
];

/// One allow/deny layer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layer {
    /// Where it comes from, for explanations (`tools`, `tools.by_provider.openai`, …).
    pub source: String,
    /// A profile this layer narrows to.
    pub profile: Option<String>,
    /// Names or patterns allowed (empty: no narrowing).
    pub allow: Vec<String>,
    /// Names or patterns denied.
    pub deny: Vec<String>,
}

/// Everything the policy depends on.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Global, global per-provider, agent, agent per-provider and group layers, in order.
    pub layers: Vec<Layer>,
    /// A group or channel session.
    pub group: bool,
    /// Sandbox mode.
    pub sandbox: bool,
    /// A sub-agent run.
    pub subagent: bool,
    /// A sub-agent may still spawn (`agent.subagents.max_depth` above 1; the depth itself is
    /// checked when it spawns).
    pub subagent_may_spawn: bool,
}

fn any(patterns: &[impl AsRef<str>], tool: &str) -> bool {
    patterns.iter().any(|p| matches(p.as_ref(), tool))
}

fn profile_allows(profile: Option<&str>, tool: &str) -> Result<bool, String> {
    let Some(name) = profile.map(|p| p.trim().to_ascii_lowercase()) else {
        return Ok(true);
    };
    let (_, allow) = PROFILES.iter().find(|(p, _)| *p == name).ok_or_else(|| {
        format!("unknown tool profile '{name}' (minimal, coding, messaging, full)")
    })?;
    Ok(any(allow, tool))
}

impl Policy {
    /// The kind of prompt the session gets: a sub-agent's, a group's (also anyone's but the
    /// owner's), or a direct one.
    pub(crate) fn session_kind(&self) -> crate::session_kind::SessionKind {
        use crate::session_kind::SessionKind;
        if self.subagent {
            SessionKind::Subagent
        } else if self.group {
            SessionKind::Group
        } else {
            SessionKind::Direct
        }
    }

    /// Whether `tool` passes every layer; the error names an unknown profile.
    ///
    /// # Errors
    /// An unknown profile name.
    pub fn allows(&self, tool: &str) -> Result<bool, String> {
        // Profiles first (global, then per provider …), then each layer's allow/deny.
        for layer in &self.layers {
            if !profile_allows(layer.profile.as_deref(), tool)
                .map_err(|e| format!("[{}] {e}", layer.source))?
            {
                return Ok(false);
            }
        }
        for layer in &self.layers {
            if any(&layer.deny, tool) || (!layer.allow.is_empty() && !any(&layer.allow, tool)) {
                return Ok(false);
            }
        }
        Ok(!(self.group && any(GROUP_DENY, tool)
            || self.sandbox && any(SANDBOX_DENY, tool)
            || self.subagent
                && any(SUBAGENT_DENY, tool)
                && !(self.subagent_may_spawn && tool.eq_ignore_ascii_case("sessions_spawn"))))
    }

    /// The names among `tools` that pass.
    ///
    /// # Errors
    /// An unknown profile name.
    pub fn filter<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<&'a str>, String> {
        let mut out = Vec::new();
        for tool in tools {
            if self.allows(tool)? {
                out.push(tool);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        "memory_search",
    ];

    fn profile(name: &str) -> Layer {
        Layer {
            source: "tools".into(),
            profile: Some(name.into()),
            ..Layer::default()
        }
    }

    fn layer(allow: &[&str], deny: &[&str]) -> Layer {
        Layer {
            source: "test".into(),
            profile: None,
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn minimal_offers_only_session_status() {
        let p = Policy {
            layers: vec![profile("minimal")],
            ..Policy::default()
        };
        assert_eq!(p.filter(ALL.iter().copied()).unwrap(), ["session_status"]);
    }

    #[test]
    fn coding_profile_and_groups() {
        let p = Policy {
            layers: vec![profile("Coding")],
            ..Policy::default()
        };
        let got = p.filter(ALL.iter().copied()).unwrap();
        assert!(got.contains(&"terminal_exec") && got.contains(&"apply_patch"));
        assert!(!got.contains(&"web_fetch"));
    }

    #[test]
    fn plugins_are_a_group_and_never_reach_groups_or_the_sandbox() {
        let tools = ["calc__add", "fs__read_file", "terminal_exec"];
        let p = Policy {
            layers: vec![layer(&[], &["group:plugins"])],
            ..Policy::default()
        };
        assert_eq!(p.filter(tools).unwrap(), ["terminal_exec"]);
        let p = Policy {
            layers: vec![layer(&["group:plugins"], &["fs__*"])],
            ..Policy::default()
        };
        assert_eq!(p.filter(tools).unwrap(), ["calc__add"]);
        for p in [
            Policy {
                group: true,
                ..Policy::default()
            },
            Policy {
                sandbox: true,
                ..Policy::default()
            },
        ] {
            assert!(!p.allows("calc__add").unwrap(), "{p:?}");
        }
        assert!(Policy::default().allows("calc__add").unwrap());
    }

    #[test]
    fn deny_wins_and_layers_only_narrow() {
        let p = Policy {
            layers: vec![
                layer(&["group:fs", "web_*"], &["WRITE"]),
                layer(&["*"], &[]),
            ],
            ..Policy::default()
        };
        assert_eq!(
            p.filter(ALL.iter().copied()).unwrap(),
            ["read", "edit", "apply_patch", "web_fetch"]
        );
        // A later layer cannot add back what an earlier one removed.
        let p = Policy {
            layers: vec![layer(&["read"], &[]), layer(&["read", "write"], &[])],
            ..Policy::default()
        };
        assert_eq!(p.filter(ALL.iter().copied()).unwrap(), ["read"]);
        // The provider profile narrows the global profile.
        let p = Policy {
            layers: vec![profile("coding"), profile("minimal")],
            ..Policy::default()
        };
        assert_eq!(p.filter(ALL.iter().copied()).unwrap(), ["session_status"]);
    }

    #[test]
    fn subagents_groups_and_sandbox() {
        let p = Policy {
            subagent: true,
            ..Policy::default()
        };
        let got = p.filter(ALL.iter().copied()).unwrap();
        for denied in [
            "session_status",
            "sessions_list",
            "sessions_history",
            "memory_search",
        ] {
            assert!(!got.contains(&denied), "{denied}");
        }
        assert!(got.contains(&"terminal_exec"));
        let p = Policy {
            group: true,
            ..Policy::default()
        };
        assert!(!p.allows("terminal_exec").unwrap() && p.allows("read").unwrap());
        let p = Policy {
            sandbox: true,
            ..Policy::default()
        };
        assert!(!p.allows("write").unwrap() && p.allows("web_fetch").unwrap());
        let p = Policy {
            layers: vec![profile("everything")],
            ..Policy::default()
        };
        let e = p.allows("read").unwrap_err();
        assert!(e.contains("everything") && e.contains("[tools]"), "{e}");
    }
}
