//! The search providers, their order, and what each failure means for the next one.

use lurkbot_core::{Home, WebSearchConfig};

use super::wire::Failure;
use super::{SearchError, SearchHit, SearchRequest};

/// A search provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Brave Search API (`BRAVE_API_KEY`).
    Brave,
    /// Tavily (`TAVILY_API_KEY`).
    Tavily,
    /// The owner's SearXNG (`searxng_url`).
    Searxng,
    /// DuckDuckGo's HTML endpoint (no key).
    DuckDuckGo,
}

impl Provider {
    const ALL: [Self; 4] = [Self::Brave, Self::Tavily, Self::Searxng, Self::DuckDuckGo];

    /// The name config and messages use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Brave => "brave",
            Self::Tavily => "tavily",
            Self::Searxng => "searxng",
            Self::DuckDuckGo => "duckduckgo",
        }
    }

    /// Asks this provider.
    pub(super) async fn ask(
        self,
        client: &reqwest::Client,
        settings: &WebSearchConfig,
        keys: &Keys,
        request: &SearchRequest,
    ) -> Result<Vec<SearchHit>, Failure> {
        match self {
            Self::Brave => {
                let key = keys.brave.as_deref().ok_or_else(|| {
                    Failure::NotSetUp("BRAVE_API_KEY is not set in the home's .env".into())
                })?;
                super::brave::ask(client, &settings.brave_url, key, request).await
            }
            Self::Tavily => {
                let key = keys.tavily.as_deref().ok_or_else(|| {
                    Failure::NotSetUp("TAVILY_API_KEY is not set in the home's .env".into())
                })?;
                super::tavily::ask(client, &settings.tavily_url, key, request).await
            }
            Self::Searxng => {
                let base = settings.searxng_url.as_deref().ok_or_else(|| {
                    Failure::NotSetUp(
                        "set [tools.web.search] searxng_url to your instance in config.toml".into(),
                    )
                })?;
                super::searxng::ask(client, base, request).await
            }
            Self::DuckDuckGo => {
                super::duckduckgo::ask(client, &settings.duckduckgo_url, request).await
            }
        }
    }
}

/// The providers' keys, from the environment or the home's `.env`.
pub(super) struct Keys {
    pub(super) brave: Option<String>,
    pub(super) tavily: Option<String>,
}

impl Keys {
    pub(super) fn from_home(home: &Home) -> Self {
        let vars = crate::setup::variables(home);
        let key = |name: &str| vars(name).filter(|v| !v.trim().is_empty());
        Self {
            brave: key("BRAVE_API_KEY"),
            tavily: key("TAVILY_API_KEY"),
        }
    }
}

/// The providers to ask, in order: those `providers` names, or when it is empty every provider
/// that is set up and then DuckDuckGo.
pub(super) fn order(settings: &WebSearchConfig, keys: &Keys) -> Result<Vec<Provider>, SearchError> {
    if settings.providers.is_empty() {
        let mut order = Vec::new();
        if keys.brave.is_some() {
            order.push(Provider::Brave);
        }
        if keys.tavily.is_some() {
            order.push(Provider::Tavily);
        }
        if settings.searxng_url.is_some() {
            order.push(Provider::Searxng);
        }
        order.push(Provider::DuckDuckGo);
        return Ok(order);
    }
    let mut order = Vec::new();
    for name in &settings.providers {
        let provider = Provider::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| SearchError::UnknownProvider(name.clone()))?;
        if !order.contains(&provider) {
            order.push(provider);
        }
    }
    Ok(order)
}
