//! `memory_search` and `memory_get`: the agent's long-term memory (`workspace/MEMORY.md`,
//! `workspace/memory/*.md`). A search first brings the index up to date (unchanged files cost a
//! hash), then ranks chunks: hybrid (0.7 vector + 0.3 BM25) with an embedder, keyword
//! otherwise or when the embedder fails. Never offered to group sessions.

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};

/// Lines `memory_get` returns when the call does not say.
const DEFAULT_LINES: u64 = 60;

/// `memory_search`.
pub(crate) struct MemorySearchTool;

impl Tool for MemorySearchTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "memory_search".into(),
            description: "Search MEMORY.md and memory/*.md by meaning and keywords; returns paths and line ranges for memory_get.".into(),
            parameters: schema(r#"{"type": "object", "properties": {
                "query": {"type": "string"},
                "maxResults": {"type": "integer"},
                "minScore": {"type": "number"}},
                "required": ["query"]}"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let query = match string_arg(args, "query") {
                Ok(q) => q,
                Err(e) => return e,
            };
            let memory = &ctx.config.memory;
            let max = args
                .get("maxResults")
                .and_then(Value::as_u64)
                .map_or(memory.max_results, |n| n as usize)
                .clamp(1, 50);
            let min = args
                .get("minScore")
                .and_then(Value::as_f64)
                .unwrap_or(memory.min_score)
                .clamp(0.0, 1.0);
            let vars = crate::setup::variables(ctx.home);
            match lurkbot_memory::recall(ctx.home, memory, &vars, query, max, min).await {
                Ok(recall) => {
                    if let Some(why) = &recall.degraded {
                        tracing::warn!("memory_search fell back to keyword search: {why}");
                    }
                    ToolOutput::ok(json!(recall.hits).to_string())
                }
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
    }
}

/// `memory_get`.
pub(crate) struct MemoryGetTool;

impl Tool for MemoryGetTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "memory_get".into(),
            description: "Read lines of a memory file (MEMORY.md or memory/<file>.md).".into(),
            parameters: schema(
                r#"{"type": "object", "properties": {
                "path": {"type": "string"},
                "from": {"type": "integer", "minimum": 1},
                "lines": {"type": "integer", "minimum": 1, "maximum": 500}},
                "required": ["path"]}"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let path = match string_arg(args, "path") {
                Ok(p) => p.trim_start_matches("workspace/"),
                Err(e) => return e,
            };
            let is_memory = path == "MEMORY.md"
                || path
                    .strip_prefix("memory/")
                    .is_some_and(|f| f.ends_with(".md") && !f.contains('/'));
            if !is_memory {
                return ToolOutput::error(format!(
                    "'{path}' is not a memory file: use MEMORY.md or memory/<file>.md (read opens other files)"
                ));
            }
            // Through the home's one confinement check, like every file tool.
            // Asks the protection model about the resolved target, like `read`: a memory
            // file that is a link to config.toml or a `.env` is a secret.
            let resolved = match super::fs::resolve_path(ctx, &format!("workspace/{path}")) {
                Ok(p) => p,
                Err(e) => return e,
            };
            if let Err(refused) = super::fs::readable(ctx, &resolved) {
                return refused;
            }
            let text = match std::fs::read_to_string(resolved.absolute()) {
                Ok(t) => t,
                Err(e) => return ToolOutput::error(format!("{path}: {e}")),
            };
            let from = args.get("from").and_then(Value::as_u64).unwrap_or(1).max(1) as usize;
            let count = args
                .get("lines")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_LINES)
                .clamp(1, 500) as usize;
            let lines: Vec<String> = text
                .lines()
                .enumerate()
                .skip(from - 1)
                .take(count)
                .map(|(i, l)| format!("{}: {l}", i + 1))
                .collect();
            if lines.is_empty() {
                return ToolOutput::error(format!(
                    "{path} has {} lines; ask for a line within them",
                    text.lines().count()
                ));
            }
            ToolOutput::ok(lines.join("\n"))
        })
    }
}
