//! `apply_patch`: several file changes in one call, in the patch format OpenClaw and Codex use:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: notes/todo.md
//! +first line
//! *** Update File: workspace/AGENTS.md
//! *** Move to: workspace/AGENTS-old.md      (optional)
//! @@ ## Tools                                (optional: a line to find first)
//!  context line
//! -old line
//! +new line
//! *** Delete File: tmp/scratch.txt
//! *** End Patch
//! ```
//!
//! All or nothing as far as the file system allows: the whole patch is parsed, every path is
//! checked (home-confined, the same protected files as `write`) and every hunk is located
//! before the first file is touched; then each file is written atomically. Hunks match exactly,
//! then ignoring trailing white space, then ignoring surrounding white space.

use lurkbot_core::HomePath;
use lurkbot_llm::ToolSpec;
use serde_json::Value;

use super::fs::{readable, resolve_path, writable};
use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Add {
        path: String,
        lines: Vec<String>,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

/// One `@@` hunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Chunk {
    header: Option<String>,
    old: Vec<String>,
    new: Vec<String>,
}

/// Parses a patch.
fn parse(text: &str) -> Result<Vec<Op>, String> {
    let mut lines = text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l));
    let first = lines.by_ref().find(|l| !l.trim().is_empty());
    if first.map(str::trim) != Some("*** Begin Patch") {
        return Err("the patch must start with '*** Begin Patch'".into());
    }
    let mut ops = Vec::new();
    let mut ended = false;
    let mut lines = lines.peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "*** End Patch" {
            ended = true;
            break;
        }
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            let mut content = Vec::new();
            while let Some(next) = lines.peek() {
                let Some(added) = next.strip_prefix('+') else {
                    break;
                };
                content.push(added.to_string());
                lines.next();
            }
            ops.push(Op::Add {
                path: path.trim().into(),
                lines: content,
            });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            ops.push(Op::Delete {
                path: path.trim().into(),
            });
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            let move_to = lines
                .next_if(|l| l.starts_with("*** Move to: "))
                .map(|l| l["*** Move to: ".len()..].trim().to_string());
            let mut chunks: Vec<Chunk> = Vec::new();
            while let Some(next) = lines.peek().copied() {
                if next.starts_with("*** ") && next.trim() != "*** End of File" {
                    break;
                }
                lines.next();
                if next.trim() == "*** End of File" {
                    continue;
                }
                if let Some(header) = next.strip_prefix("@@") {
                    let header = header.trim();
                    chunks.push(Chunk {
                        header: (!header.is_empty()).then(|| header.to_string()),
                        ..Chunk::default()
                    });
                    continue;
                }
                if chunks.is_empty() {
                    chunks.push(Chunk::default());
                }
                let chunk = chunks.last_mut().ok_or("no hunk")?;
                match next.chars().next() {
                    Some('+') => chunk.new.push(next[1..].to_string()),
                    Some('-') => chunk.old.push(next[1..].to_string()),
                    Some(' ') => {
                        chunk.old.push(next[1..].to_string());
                        chunk.new.push(next[1..].to_string());
                    }
                    None => {
                        chunk.old.push(String::new());
                        chunk.new.push(String::new());
                    }
                    Some(_) => {
                        return Err(format!(
                            "in the update of {path}: the line '{next}' must start with ' ', '+', '-' or '@@'"
                        ));
                    }
                }
            }
            if chunks.iter().all(|c| c.old.is_empty() && c.new.is_empty()) && move_to.is_none() {
                return Err(format!("the update of {} changes nothing", path.trim()));
            }
            ops.push(Op::Update {
                path: path.trim().into(),
                move_to,
                chunks,
            });
        } else if !line.trim().is_empty() {
            return Err(format!(
                "unexpected line '{line}': expected '*** Add File:', '*** Update File:', '*** Delete File:' or '*** End Patch'"
            ));
        }
    }
    if !ended {
        return Err("the patch must end with '*** End Patch'".into());
    }
    if ops.is_empty() {
        return Err("the patch changes no file".into());
    }
    Ok(ops)
}

/// Applies the hunks to `text`.
fn apply_chunks(path: &str, text: &str, chunks: &[Chunk]) -> Result<String, String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cursor = 0;
    for chunk in chunks {
        if let Some(header) = &chunk.header {
            let at = find(&lines, std::slice::from_ref(header), cursor)
                .ok_or_else(|| format!("{path}: the line '{header}' after @@ was not found"))?;
            cursor = at + 1;
        }
        let at = if chunk.old.is_empty() {
            lines.len()
        } else {
            find(&lines, &chunk.old, cursor).ok_or_else(|| {
                format!(
                    "{path}: these lines were not found (read the file again and retry):\n{}",
                    chunk.old.join("\n")
                )
            })?
        };
        lines.splice(at..at + chunk.old.len(), chunk.new.iter().cloned());
        cursor = at + chunk.new.len();
    }
    let mut out = lines.join("\n");
    if !lines.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

/// The first index at or after `from` where `needle` matches, exactly, then ignoring trailing
/// white space, then ignoring surrounding white space.
fn find(lines: &[String], needle: &[String], from: usize) -> Option<usize> {
    let normalisers: [fn(&str) -> &str; 3] = [|s| s, str::trim_end, str::trim];
    normalisers.iter().find_map(|norm| {
        (from..=lines.len().saturating_sub(needle.len())).find(|&i| {
            lines.len() >= i + needle.len()
                && needle
                    .iter()
                    .zip(&lines[i..])
                    .all(|(a, b)| norm(a) == norm(b))
        })
    })
}

/// A write or delete planned after every check passed.
enum Planned {
    Write(HomePath, String),
    Remove(HomePath),
}

fn plan(ctx: &ToolCtx<'_>, ops: &[Op]) -> Result<Vec<Planned>, String> {
    let target = |raw: &str| -> Result<HomePath, String> {
        let path = resolve_path(ctx, raw).map_err(|e| e.text)?;
        writable(ctx, &path).map_err(|e| e.text)?;
        Ok(path)
    };
    let mut planned = Vec::new();
    for op in ops {
        match op {
            Op::Add { path, lines } => {
                let p = target(path)?;
                if p.absolute().exists() {
                    return Err(format!(
                        "{path} exists; use '*** Update File:' to change it"
                    ));
                }
                let mut text = lines.join("\n");
                text.push('\n');
                planned.push(Planned::Write(p, text));
            }
            Op::Delete { path } => {
                let p = target(path)?;
                if !p.absolute().is_file() {
                    return Err(format!("{path} cannot be deleted: there is no such file"));
                }
                planned.push(Planned::Remove(p));
            }
            Op::Update {
                path,
                move_to,
                chunks,
            } => {
                let p = target(path)?;
                readable(ctx, &p).map_err(|e| e.text)?;
                let text = std::fs::read_to_string(p.absolute())
                    .map_err(|e| format!("{path} cannot be read: {e}"))?;
                let new = apply_chunks(path, &text, chunks)?;
                match move_to {
                    Some(dest) => {
                        planned.push(Planned::Write(target(dest)?, new));
                        planned.push(Planned::Remove(p));
                    }
                    None => planned.push(Planned::Write(p, new)),
                }
            }
        }
    }
    Ok(planned)
}

/// The `apply_patch` tool.
pub(crate) struct ApplyPatchTool;

impl Tool for ApplyPatchTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "apply_patch".into(),
            description: "Add, update, move or delete files inside the LurkBot home in one patch: '*** Begin Patch', then '*** Add File: path' (+lines), '*** Update File: path' ([*** Move to: path], '@@ optional anchor', lines starting ' ', '-', '+'), '*** Delete File: path', then '*** End Patch'. Nothing is changed unless every part applies.".into(),
            parameters: schema(r#"{
                "type": "object",
                "properties": {"input": {"type": "string", "description": "the whole patch"}},
                "required": ["input"]
            }"#),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = match string_arg(args, "input") {
                Ok(i) => i,
                Err(e) => return e,
            };
            let planned = match parse(input).and_then(|ops| plan(ctx, &ops)) {
                Ok(p) => p,
                Err(message) => return ToolOutput::error(format!("nothing changed: {message}")),
            };
            let mut done = Vec::new();
            for step in planned {
                let result = match &step {
                    Planned::Write(path, text) => path
                        .absolute()
                        .parent()
                        .map_or(Ok(()), std::fs::create_dir_all)
                        .map_err(|e| e.to_string())
                        .and_then(|()| {
                            lurkbot_core::write_atomic(path.absolute(), text.as_bytes())
                                .map_err(|e| e.to_string())
                        })
                        .map(|()| format!("wrote {}", path.relative())),
                    Planned::Remove(path) => std::fs::remove_file(path.absolute())
                        .map_err(|e| e.to_string())
                        .map(|()| format!("deleted {}", path.relative())),
                };
                match result {
                    Ok(line) => done.push(line),
                    Err(e) => {
                        return ToolOutput::error(format!(
                            "stopped: {e}; done before the failure: {}",
                            if done.is_empty() {
                                "nothing".into()
                            } else {
                                done.join(", ")
                            }
                        ));
                    }
                }
            }
            ToolOutput::ok(done.join("\n"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &[&str]) -> Vec<String> {
        s.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn parses_every_operation() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: a.md\n+one\n+two\n*** Delete File: b.md\n*** Update File: c.md\n*** Move to: d.md\n@@ ## Head\n ctx\n-old\n+new\n*** End of File\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0],
            Op::Add {
                path: "a.md".into(),
                lines: lines(&["one", "two"])
            }
        );
        assert_eq!(
            ops[2],
            Op::Update {
                path: "c.md".into(),
                move_to: Some("d.md".into()),
                chunks: vec![Chunk {
                    header: Some("## Head".into()),
                    old: lines(&["ctx", "old"]),
                    new: lines(&["ctx", "new"]),
                }],
            }
        );
    }

    #[test]
    fn refuses_malformed_patches() {
        for (patch, expect) in [
            ("*** Add File: a\n+x\n*** End Patch", "Begin Patch"),
            ("*** Begin Patch\n*** Add File: a\n+x\n", "End Patch"),
            ("*** Begin Patch\n*** End Patch", "no file"),
            (
                "*** Begin Patch\nrm -rf /\n*** End Patch",
                "unexpected line",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n*x\n*** End Patch",
                "must start with",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End Patch",
                "changes nothing",
            ),
        ] {
            let e = parse(patch).unwrap_err();
            assert!(e.contains(expect), "{patch}: {e}");
        }
    }

    #[test]
    fn applies_hunks_with_anchors_and_loose_white_space() {
        let text = "# A\nx = 1\n## B\nx = 1\ny = 2\n";
        let chunks = vec![Chunk {
            header: Some("## B".into()),
            old: lines(&["x = 1  "]),
            new: lines(&["x = 3"]),
        }];
        assert_eq!(
            apply_chunks("f", text, &chunks).unwrap(),
            "# A\nx = 1\n## B\nx = 3\ny = 2\n"
        );
        let append = vec![Chunk {
            header: None,
            old: vec![],
            new: lines(&["z"]),
        }];
        assert_eq!(apply_chunks("f", "a\n", &append).unwrap(), "a\nz\n");
        let missing = vec![Chunk {
            header: None,
            old: lines(&["nope"]),
            new: vec![],
        }];
        assert!(
            apply_chunks("f", text, &missing)
                .unwrap_err()
                .contains("nope")
        );
    }
}
