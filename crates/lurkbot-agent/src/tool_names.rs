//! Names of tools as policies and approvals write them: a tool's name, `*`, `prefix_*`, a
//! `group:…` of built-in tools, or `group:plugins` (every MCP tool). Case-insensitive.

/// Tool groups.
pub(crate) const GROUPS: &[(&str, &[&str])] = &[
    ("group:memory", &["memory_search", "memory_get"]),
    ("group:web", &["web_search", "web_fetch"]),
    ("group:fs", &["read", "write", "edit", "apply_patch"]),
    ("group:runtime", &["terminal_exec"]),
    (
        "group:sessions",
        &[
            "sessions_spawn",
            "sessions_send",
            "sessions_list",
            "sessions_history",
            "session_status",
            "agents_list",
        ],
    ),
    ("group:automation", &["cron", "gateway"]),
    ("group:messaging", &["message"]),
    ("group:ui", &["browser", "canvas"]),
    ("group:tts", &["tts"]),
    ("group:nodes", &["nodes"]),
];

/// The group of MCP tools: every `<server>__<tool>` name (no built-in tool has `__`).
pub(crate) const PLUGINS: &str = "group:plugins";

/// Whether `pattern` (a name, `*`, `prefix_*` or `group:…`) matches `tool`.
pub(crate) fn matches(pattern: &str, tool: &str) -> bool {
    let pattern = pattern.trim().to_ascii_lowercase();
    let tool = tool.to_ascii_lowercase();
    if pattern == "*" {
        return true;
    }
    if pattern == PLUGINS {
        return tool.contains("__");
    }
    if let Some((_, members)) = GROUPS.iter().find(|(g, _)| *g == pattern) {
        return members.contains(&tool.as_str());
    }
    if let Some(prefix) = pattern.strip_suffix('*') {
        return tool.starts_with(prefix);
    }
    pattern == tool
}
