//! An MCP tool result as text for the model: text blocks as they are, structured content as
//! JSON, other blocks named (an image, a resource link) rather than inlined.

use serde_json::Value;

use crate::tools::ToolOutput;

/// The text of a `tools/call` result (`content`, `structuredContent`, `isError`).
pub(crate) fn output(result: &Value) -> ToolOutput {
    let blocks = result["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut parts: Vec<String> = blocks
        .iter()
        .map(|value| match value.get("type") {
            Some(_) => match value["type"].as_str() {
                Some("text") => value["text"].as_str().unwrap_or_default().to_string(),
                Some("image") | Some("audio") => format!(
                    "[{} content, {}]",
                    value["type"].as_str().unwrap_or_default(),
                    value["mimeType"].as_str().unwrap_or("unknown type")
                ),
                Some("resource_link") => {
                    format!("[resource {}]", value["uri"].as_str().unwrap_or_default())
                }
                Some("resource") => value["resource"]["text"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        format!(
                            "[resource {}]",
                            value["resource"]["uri"].as_str().unwrap_or_default()
                        )
                    }),
                _ => value.to_string(),
            },
            None => String::new(),
        })
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null())
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result["isError"] == true {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}
