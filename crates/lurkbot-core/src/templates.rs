//! Files `lurkbot init` writes: the commented config and the workspace bootstrap files.

/// The commented `config.toml`; `@TOKEN@` is replaced by a fresh gateway token.
pub(crate) const CONFIG: &str = include_str!("../templates/config.toml");

/// Bootstrap files of the workspace (ARCHITECTURE.md §2), in prompt order.
pub(crate) const BOOTSTRAP: &[(&str, &str)] = &[
    ("AGENTS.md", include_str!("../templates/AGENTS.md")),
    ("SOUL.md", include_str!("../templates/SOUL.md")),
    ("TOOLS.md", include_str!("../templates/TOOLS.md")),
    ("IDENTITY.md", include_str!("../templates/IDENTITY.md")),
    ("USER.md", include_str!("../templates/USER.md")),
    ("HEARTBEAT.md", include_str!("../templates/HEARTBEAT.md")),
    ("MEMORY.md", include_str!("../templates/MEMORY.md")),
    ("BOOTSTRAP.md", include_str!("../templates/BOOTSTRAP.md")),
];
