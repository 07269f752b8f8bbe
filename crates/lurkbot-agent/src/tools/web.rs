//! `web_fetch` and `web_search`: thin tools over [`crate::web`], which the owner's `lurkbot
//! search` shares. Their answers are third-party text; the loop wraps them as untrusted.

use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::{Tool, ToolCtx, ToolFuture, ToolOutput, schema, string_arg};
use crate::web::article::ExtractMode;
use crate::web::fetch::{FetchRequest, MAX_CHARS, fetch_page};
use crate::web::search::{Freshness, MAX_COUNT, SearchRequest, search};

/// The `web_fetch` tool.
pub(crate) struct WebFetchTool;

impl Tool for WebFetchTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_fetch".into(),
            description: "Fetch a URL; HTML pages come back as their main article.".into(),
            parameters: schema(
                r#"{
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "extractMode": {"type": "string", "enum": ["markdown", "text"]},
                    "maxChars": {"type": "integer"}
                },
                "required": ["url"]
            }"#,
            ),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let url = match string_arg(args, "url") {
                Ok(u) => u,
                Err(e) => return e,
            };
            let mode = match args.get("extractMode").and_then(Value::as_str) {
                None => ExtractMode::Markdown,
                Some(m) => match ExtractMode::parse(m) {
                    Some(mode) => mode,
                    None => {
                        return ToolOutput::error(format!(
                            "extractMode is markdown or text, not '{m}'"
                        ));
                    }
                },
            };
            let max_chars = args
                .get("maxChars")
                .and_then(Value::as_u64)
                .map_or(MAX_CHARS, |n| usize::try_from(n).unwrap_or(MAX_CHARS));
            let request = FetchRequest {
                url: url.to_string(),
                mode,
                max_chars,
            };
            match fetch_page(ctx.home, ctx.config, &request, ctx.session.as_str()).await {
                Ok(text) => ToolOutput::ok(text),
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

/// The `web_search` tool.
pub(crate) struct WebSearchTool;

impl Tool for WebSearchTool {
    fn side_effect_free(&self, _args: &Value) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_search".into(),
            description: "Search the web; returns title, url, snippet.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "count": {"type": "integer", "maximum": MAX_COUNT},
                    "freshness": {"type": "string", "enum": ["day", "week", "month", "year"]},
                    "country": {"type": "string"},
                    "language": {"type": "string"}
                },
                "required": ["query"]
            }),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let query = match string_arg(args, "query") {
                Ok(q) => q,
                Err(e) => return e,
            };
            let request = match request_from(args, query, ctx.config.tools.web.search.count) {
                Ok(r) => r,
                Err(e) => return e,
            };
            match search(ctx.home, ctx.config, request, ctx.session.as_str()).await {
                Ok(found) => {
                    ToolOutput::ok(serde_json::to_string(&found).unwrap_or_else(|e| e.to_string()))
                }
                Err(e) => ToolOutput::error(format!("{}: {e}", e.code())),
            }
        })
    }
}

fn request_from(args: &Value, query: &str, default_count: u8) -> Result<SearchRequest, ToolOutput> {
    let count = match args.get("count") {
        None | Some(Value::Null) => default_count.clamp(1, MAX_COUNT),
        Some(v) => match v.as_u64().and_then(|n| u8::try_from(n).ok()) {
            Some(n) => n,
            None => {
                return Err(ToolOutput::error(format!(
                    "count is a whole number from 1 to {MAX_COUNT}"
                )));
            }
        },
    };
    let freshness = match args.get("freshness").and_then(Value::as_str) {
        None => None,
        Some(f) => Some(Freshness::parse(f).ok_or_else(|| {
            ToolOutput::error(format!("freshness is day, week, month or year, not '{f}'"))
        })?),
    };
    let text = |name: &str| {
        args.get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    Ok(SearchRequest {
        query: query.to_string(),
        count,
        freshness,
        country: text("country"),
        language: text("language"),
    })
}
