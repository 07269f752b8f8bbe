//! `[memory]` and `[mcp]`: the settings of long-term memory's embedder and of the MCP servers
//! whose tools join the agent's (ARCHITECTURE.md §7).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The embedders `[memory] embedder` may name.
pub const EMBEDDERS: &[&str] = &["none", "openai", "local"];

/// `[memory]`: how `workspace/MEMORY.md` and `workspace/memory/*.md` are searched.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct MemoryConfig {
    /// `none` (keyword search only, the default), `openai` (any OpenAI-compatible
    /// `/v1/embeddings`) or `local` (a model directory run in-process; needs a build with the
    /// `local-embeddings` feature).
    pub embedder: String,
    /// The embedding model (`openai`; default `text-embedding-3-small`).
    pub model: Option<String>,
    /// The embeddings server (`openai`; default `OPENAI_BASE_URL`, else
    /// `https://api.openai.com/v1`). The key is `MEMORY_EMBEDDINGS_API_KEY`, else
    /// `OPENAI_API_KEY`, from `secrets/.env`.
    pub base_url: Option<String>,
    /// The model directory (`local`): `config.json`, `tokenizer.json`, `model.safetensors` of a
    /// BERT sentence encoder such as all-MiniLM-L6-v2. Relative to the home.
    pub local_model_dir: Option<String>,
    /// Results `memory_search` returns when the model does not say (default 6).
    pub max_results: usize,
    /// The lowest score `memory_search` returns when the model does not say (default 0.25: a
    /// hybrid hit found by meaning alone scores 0.7 × its cosine similarity, and 0.36 is
    /// typical of a good synonym match with MiniLM).
    pub min_score: f64,
    /// Whether the gateway re-indexes when a memory file changes (default true).
    pub watch: bool,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            embedder: "none".into(),
            model: None,
            base_url: None,
            local_model_dir: None,
            max_results: 6,
            min_score: 0.25,
            watch: true,
        }
    }
}

/// `[mcp]`: Model Context Protocol servers whose tools the agent may call.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct McpConfig {
    /// `[mcp.servers.<name>]`: one server each; its tools are named `<name>__<tool>`.
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `[mcp.servers.<name>]`: how to reach one MCP server: `command` (stdio) or `url`
/// (streamable HTTP).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct McpServerConfig {
    /// The program and its arguments, e.g. `["python3", "server.py"]` (no shell).
    pub command: Vec<String>,
    /// Environment of the program. A value `${NAME}` is taken from `secrets/.env`, so secrets
    /// stay out of the config.
    pub env: BTreeMap<String, String>,
    /// The server's streamable HTTP endpoint, e.g. `http://127.0.0.1:8000/mcp`.
    pub url: Option<String>,
    /// Whether the server is used (default true).
    pub enabled: bool,
    /// Seconds one tool call may take before it fails and the server is restarted (default 60).
    pub timeout_seconds: u64,
    /// Seconds the server may take to start and list its tools (default 20).
    pub startup_timeout_seconds: u64,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            enabled: true,
            timeout_seconds: 60,
            startup_timeout_seconds: 20,
        }
    }
}

impl crate::Config {
    /// `[memory]` and `[mcp]` values that cannot work.
    pub(crate) fn plugin_problems(&self) -> Vec<crate::ConfigProblem> {
        let mut problems = Vec::new();
        let mut problem = |key: String, message: String| {
            problems.push(crate::ConfigProblem { key, message });
        };
        let memory = &self.memory;
        if !EMBEDDERS.contains(&memory.embedder.as_str()) {
            problem(
                "memory.embedder".into(),
                format!(
                    "memory.embedder '{}' is not an embedder: write none, openai or local",
                    memory.embedder
                ),
            );
        }
        if memory.embedder == "local" && memory.local_model_dir.is_none() {
            problem(
                "memory.local_model_dir".into(),
                "memory.embedder = \"local\" needs memory.local_model_dir: the folder with config.json, tokenizer.json and model.safetensors".into(),
            );
        }
        if !(0.0..=1.0).contains(&memory.min_score) {
            problem(
                "memory.min_score".into(),
                format!(
                    "memory.min_score is {}; it must be 0 to 1",
                    memory.min_score
                ),
            );
        }
        if !(1..=50).contains(&memory.max_results) {
            problem(
                "memory.max_results".into(),
                format!(
                    "memory.max_results is {}; it must be 1 to 50",
                    memory.max_results
                ),
            );
        }
        for (name, server) in &self.mcp.servers {
            let key = format!("mcp.servers.{name}");
            let good_name = !name.is_empty()
                && !name.contains("__")
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !good_name {
                problem(
                    key.clone(),
                    format!(
                        "MCP server name '{name}' must be letters, digits, '-' or '_' without '__' (its tools are named <server>__<tool>)"
                    ),
                );
            }
            match (server.command.is_empty(), server.url.as_deref()) {
                (true, None) => problem(
                    key.clone(),
                    format!("{key} needs command = [\"program\", \"arg\"…] or url = \"http://…\""),
                ),
                (false, Some(_)) => problem(
                    key.clone(),
                    format!("{key} has both command and url: keep one"),
                ),
                (true, Some(url))
                    if !(url.starts_with("http://") || url.starts_with("https://")) =>
                {
                    problem(
                        format!("{key}.url"),
                        format!("{key}.url '{url}' must be an http:// or https:// URL"),
                    );
                }
                _ => {}
            }
            if server.timeout_seconds == 0 || server.startup_timeout_seconds == 0 {
                problem(
                    key.clone(),
                    format!(
                        "{key}: timeout_seconds and startup_timeout_seconds must be at least 1"
                    ),
                );
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn plugin_settings_that_cannot_work_are_named() {
        let text = "[memory]\nembedder = \"magic\"\nmin_score = 2.0\n\
                    [mcp.servers.\"a__b\"]\ncommand = [\"x\"]\nurl = \"http://h/mcp\"\n\
                    [mcp.servers.empty]\n\
                    [mcp.servers.ftp]\nurl = \"ftp://h\"\n";
        let (_, problems) =
            crate::Config::check(Path::new("config.toml"), text).expect("a valid config");
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        for key in [
            "memory.embedder",
            "memory.min_score",
            "mcp.servers.a__b",
            "mcp.servers.empty",
            "mcp.servers.ftp.url",
        ] {
            assert!(keys.contains(&key), "{key} not in {keys:?}");
        }
        let (_, problems) = crate::Config::check(
            Path::new("config.toml"),
            "[memory]\nembedder = \"openai\"\n[mcp.servers.calc]\ncommand = [\"python3\", \"calc.py\"]\n",
        )
        .expect("a valid config");
        assert!(problems.is_empty(), "{problems:?}");
        let (_, problems) =
            crate::Config::check(Path::new("config.toml"), "[memory]\nembedder = \"local\"\n")
                .expect("a valid config");
        assert_eq!(problems[0].key, "memory.local_model_dir");
    }
}
