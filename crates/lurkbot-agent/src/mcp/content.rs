//! An MCP tool result as text for the model: text blocks as they are, structured content as
//! JSON, other blocks named (an image, a resource link) rather than inlined.

use rmcp::model::CallToolResult;

use crate::tools::ToolOutput;

pub(crate) fn output(result: &CallToolResult) -> ToolOutput {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match serde_json::to_value(block) {
            Ok(value) => match value["type"].as_str() {
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
            Err(_) => String::new(),
        })
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}
