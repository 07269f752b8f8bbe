//! `read`, `write` and `edit`: files inside the LurkBot home only. Paths are home-relative;
//! escapes (absolute paths, `..`, symlinks out) are refused, and the protection model of
//! `lurkbot-core` decides on the resolved path (links followed): secrets are never read, secrets
//! and state are never written, and group sessions never read the owner's private memory.
//! Writes are atomic.

use lurkbot_core::{AccessError, HomePath};
use lurkbot_llm::ToolSpec;
use serde_json::Value;

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};

/// Largest file `read` returns whole (larger ones are cut with a marker).
const READ_MAX_BYTES: usize = 256 * 1024;
/// Largest content `write` accepts.
const WRITE_MAX_BYTES: usize = 4 << 20;

fn resolve(ctx: &ToolCtx<'_>, args: &Value) -> Result<HomePath, ToolOutput> {
    resolve_path(ctx, string_arg(args, "path")?)
}

/// A home-relative path, confined to the home.
pub(super) fn resolve_path(ctx: &ToolCtx<'_>, raw: &str) -> Result<HomePath, ToolOutput> {
    ctx.home.resolve(raw).map_err(|e| {
        ToolOutput::error(format!(
            "{raw}: {e} (paths are relative to the LurkBot home)"
        ))
    })
}

/// Refuses a path the protection model keeps from readers (secrets), and the owner's private
/// memory in the sessions of anyone but the owner (groups, topics, a paired third party's
/// messages). Decided on the resolved path.
pub(super) fn readable(ctx: &ToolCtx<'_>, path: &HomePath) -> Result<(), ToolOutput> {
    let protection = ctx.home.protection_seen_by(path.absolute(), !ctx.others);
    if protection.readable() {
        Ok(())
    } else {
        Err(denied(path, "read", protection.reason()))
    }
}

/// Refuses a path the protection model keeps from generic writers (secrets and state).
pub(super) fn writable(ctx: &ToolCtx<'_>, path: &HomePath) -> Result<(), ToolOutput> {
    let protection = ctx.home.protection(path.absolute());
    if protection.writable() {
        Ok(())
    } else {
        Err(denied(path, "written", protection.reason()))
    }
}

fn denied(path: &HomePath, action: &'static str, reason: Option<&'static str>) -> ToolOutput {
    ToolOutput::error(
        AccessError::Protected {
            path: path.relative().to_string(),
            action,
            reason: reason.unwrap_or("it is protected"),
        }
        .to_string(),
    )
}

/// The `read` tool.
pub(crate) struct ReadTool;

impl Tool for ReadTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: "Read a text file inside the LurkBot home (path relative to it).".into(),
            parameters: schema(
                r#"{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let path = match resolve(ctx, args).and_then(|p| readable(ctx, &p).map(|()| p)) {
                Ok(p) => p,
                Err(e) => return e,
            };
            match std::fs::read(path.absolute()) {
                Ok(bytes) => {
                    let cut = bytes.len() > READ_MAX_BYTES;
                    let mut text =
                        String::from_utf8_lossy(&bytes[..bytes.len().min(READ_MAX_BYTES)])
                            .into_owned();
                    if cut {
                        text.push_str(&format!(
                            "\n…[cut at {READ_MAX_BYTES} of {} bytes]",
                            bytes.len()
                        ));
                    }
                    ToolOutput::ok(text)
                }
                Err(e) => ToolOutput::error(format!("{}: {e}", path.relative())),
            }
        })
    }
}

/// The `write` tool.
pub(crate) struct WriteTool;

impl Tool for WriteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description:
                "Create or replace a text file inside the LurkBot home (path relative to it)."
                    .into(),
            parameters: schema(
                r#"{"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let (path, content) = match resolve(ctx, args)
                .and_then(|p| writable(ctx, &p).map(|()| p))
                .and_then(|p| string_arg(args, "content").map(|c| (p, c)))
            {
                Ok(v) => v,
                Err(e) => return e,
            };
            if content.len() > WRITE_MAX_BYTES {
                return ToolOutput::error(format!(
                    "content is larger than {WRITE_MAX_BYTES} bytes"
                ));
            }
            save(&path, content)
        })
    }
}

/// Writes `bytes` atomically at a path already checked with [`writable`], making its folders.
pub(super) fn write_checked(path: &HomePath, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.absolute().parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", path.relative()))?;
    }
    lurkbot_core::write_atomic(path.absolute(), bytes)
        .map_err(|e| format!("{}: {e}", path.relative()))
}

fn save(path: &HomePath, content: &str) -> ToolOutput {
    match write_checked(path, content.as_bytes()) {
        Ok(()) => ToolOutput::ok(format!(
            "wrote {} bytes to {}",
            content.len(),
            path.relative()
        )),
        Err(e) => ToolOutput::error(e),
    }
}

/// The `edit` tool: one exact, unique replacement.
pub(crate) struct EditTool;

impl Tool for EditTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description:
                "Replace one exact, unique piece of text in a file inside the LurkBot home.".into(),
            parameters: schema(
                r#"{"type": "object", "properties": {
                "path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
                "required": ["path", "old_text", "new_text"]}"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let path = match resolve(ctx, args).and_then(|p| {
                writable(ctx, &p)
                    .and_then(|()| readable(ctx, &p))
                    .map(|()| p)
            }) {
                Ok(p) => p,
                Err(e) => return e,
            };
            let (old, new) = match string_arg(args, "old_text")
                .and_then(|o| string_arg(args, "new_text").map(|n| (o, n)))
            {
                Ok(v) => v,
                Err(e) => return e,
            };
            let text = match std::fs::read_to_string(path.absolute()) {
                Ok(t) => t,
                Err(e) => return ToolOutput::error(format!("{}: {e}", path.relative())),
            };
            match (old.is_empty(), text.matches(old).count()) {
                (true, _) => ToolOutput::error("old_text must not be empty"),
                (false, 0) => {
                    ToolOutput::error(format!("old_text was not found in {}", path.relative()))
                }
                (false, 1) => save(&path, &text.replacen(old, new, 1)),
                (false, n) => ToolOutput::error(format!(
                    "old_text occurs {n} times in {}; give more context so it is unique",
                    path.relative()
                )),
            }
        })
    }
}
