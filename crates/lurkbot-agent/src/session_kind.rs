//! What kind of session a turn runs in: the owner's own, a group's, or a sub-agent's. The
//! tool policy narrows by it and the system prompt filters its files by it.

/// The kind of session, for file filtering and the closing section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    /// The main session or a direct message.
    Direct,
    /// A group, channel or topic.
    Group,
    /// A sub-agent run.
    Subagent,
}
