//! A session's model context from its transcript's entries (ARCHITECTURE.md §5): the latest
//! compaction summary and the messages after it, unfinished tool calls answered "interrupted",
//! and the context kept in memory between model steps ([`Tracked`]).

use lurkbot_llm::{Message, Role};

use crate::transcript::Entry;

/// A session's raw context kept in memory between model steps, with the transcript length it
/// was read at.
#[derive(Debug, Clone)]
pub struct Tracked {
    pub(crate) session_id: String,
    pub(crate) len: u64,
    /// The context, unrepaired.
    pub raw: Context,
}

impl Tracked {
    /// The transcript's length in bytes this context was read at.
    pub fn transcript_bytes(&self) -> u64 {
        self.len
    }

    /// The context as the model sees it (unfinished tool calls answered "interrupted").
    pub fn context(&self) -> Context {
        Context {
            summary: self.raw.summary.clone(),
            messages: repair(self.raw.messages.clone()),
        }
    }
}

impl Context {
    /// Applies one transcript entry.
    pub(crate) fn apply(&mut self, entry: Entry) {
        match entry {
            Entry::Compaction { summary, kept, .. } => {
                let keep_from = self.messages.len().saturating_sub(kept);
                self.messages.drain(..keep_from);
                self.summary = Some(summary);
            }
            Entry::Message { message, .. } => self.messages.push(message),
        }
    }
}

/// A session's model context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The summary of everything compacted away.
    pub summary: Option<String>,
    /// The messages since.
    pub messages: Vec<Message>,
}

/// The entries of a transcript's lines (a line that is not one — a torn last line — is
/// skipped).
pub(crate) fn entries_of<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<Entry> {
    lines
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Gives every tool call without a result an error result right after its assistant message.
pub(crate) fn repair(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut open: Vec<String> = Vec::new();
    let close = |out: &mut Vec<Message>, open: &mut Vec<String>| {
        for id in open.drain(..) {
            out.push(Message::tool(
                id,
                "interrupted: this tool call never finished (the run stopped)",
                true,
            ));
        }
    };
    for message in messages {
        match message.role {
            Role::Tool => {
                let id = message.tool_call_id.clone().unwrap_or_default();
                if let Some(pos) = open.iter().position(|o| *o == id) {
                    open.remove(pos);
                    out.push(message);
                }
            }
            _ => {
                close(&mut out, &mut open);
                open = message.tool_calls.iter().map(|c| c.id.clone()).collect();
                out.push(message);
            }
        }
    }
    close(&mut out, &mut open);
    out
}
