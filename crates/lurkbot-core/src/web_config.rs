//! `[tools.web_fetch]`, `[tools.web.search]` and `[tools.media]`: how the agent reads the web
//! and looks at pictures (ARCHITECTURE.md §5.2). Search providers' base URLs are the owner's settings (not filtered by the network
//! policy); their keys live in `.env` (`BRAVE_API_KEY`, `TAVILY_API_KEY`).

use serde::{Deserialize, Serialize};

/// `[tools.web_fetch]` settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct WebFetchConfig {
    /// Older alias of `[network] allow_private` (either one allows non-public addresses).
    pub allow_private: bool,
    /// Most bytes read from one answer (default 2,000,000).
    pub max_bytes: u64,
    /// Whole-request timeout in seconds (default 30).
    pub timeout_seconds: u64,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self {
            allow_private: false,
            max_bytes: 2_000_000,
            timeout_seconds: 30,
        }
    }
}

/// `[tools.web]` settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct WebConfig {
    /// `[tools.web.search]`.
    pub search: WebSearchConfig,
}

/// `[tools.web.search]`: the providers `web_search` and `lurkbot search` ask, in order.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct WebSearchConfig {
    /// Providers tried in order: `brave`, `tavily`, `searxng`, `duckduckgo`. Empty (the
    /// default): every provider that is set up (a key in `.env`, a `searxng_url`), then
    /// DuckDuckGo, which needs no key.
    pub providers: Vec<String>,
    /// Brave Search API base URL (LurkBot appends `/res/v1/web/search`).
    pub brave_url: String,
    /// Tavily API base URL (LurkBot appends `/search`).
    pub tavily_url: String,
    /// Your SearXNG instance (LurkBot appends `/search`; its JSON format must be enabled).
    pub searxng_url: Option<String>,
    /// DuckDuckGo's HTML endpoint base URL (LurkBot appends `/html/`).
    pub duckduckgo_url: String,
    /// Results when the model does not say (at most 10).
    pub count: u8,
    /// Seconds one provider may take before the next is tried (default 15).
    pub timeout_seconds: u64,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        Self {
            providers: Vec::new(),
            brave_url: "https://api.search.brave.com".into(),
            tavily_url: "https://api.tavily.com".into(),
            searxng_url: None,
            duckduckgo_url: "https://html.duckduckgo.com".into(),
            count: 5,
            timeout_seconds: 15,
        }
    }
}

/// `[tools.media]` settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct MediaToolsConfig {
    /// A model that sees images (`provider/model`), asked to describe a picture in words when
    /// the turn's model is set with `vision = false`.
    pub image_model: Option<String>,
}

/// `[browser]`: the managed Chromium of the `browser` tool (ARCHITECTURE.md §5.3).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct BrowserConfig {
    /// Offer the `browser` tool (default true; it starts Chromium only when used).
    pub enabled: bool,
    /// The Chromium executable: a name on `PATH` (default Debian's `chromium`) or a path.
    pub executable: String,
    /// Run without a window (default true).
    pub headless: bool,
    /// Minutes unused after which Chromium is stopped (default 10).
    pub idle_minutes: u64,
    /// Offer the `evaluate` action, which runs the model's JavaScript in the page (default
    /// false).
    pub evaluate: bool,
    /// How JavaScript dialogs are answered: `dismiss` (default) or `accept`.
    pub dialogs: String,
    /// Largest download kept in `workspace/downloads/` (default 50,000,000 bytes).
    pub download_max_bytes: u64,
    /// Seconds one browser step (a navigation, a wait) may take (default 30).
    pub timeout_seconds: u64,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            executable: "chromium".into(),
            headless: true,
            idle_minutes: 10,
            evaluate: false,
            dialogs: "dismiss".into(),
            download_max_bytes: 50_000_000,
            timeout_seconds: 30,
        }
    }
}
