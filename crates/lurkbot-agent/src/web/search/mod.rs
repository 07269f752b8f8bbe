//! `web_search` and `lurkbot search` (ARCHITECTURE.md §5.2): one query asked of the configured
//! providers in order — Brave, Tavily, SearXNG, DuckDuckGo — until one answers. A rate limit, an
//! outage, a refused key or a provider that is not set up moves on to the next; when none
//! answers, one error names each provider tried and what to set. Answers are kept 15 minutes
//! (bounded), and every search, cached or not, is appended to `logs/web.jsonl`.
//!
//! Providers' base URLs are the owner's settings, so their requests are not held to the network
//! policy (§4.6); the result URLs they return are third-party data, and anything that later
//! fetches one (`web_fetch`) is.

mod brave;
mod duckduckgo;
mod provider;
mod searxng;
mod tavily;
mod wire;

use std::time::Instant;

use lurkbot_core::{Config, Home};
use serde::{Deserialize, Serialize};

use provider::Keys;
pub use provider::Provider;

use super::cache::TtlCache;

/// Most results one search returns.
pub const MAX_COUNT: u8 = 10;

/// How recent results must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Freshness {
    /// The last 24 hours.
    Day,
    /// The last 7 days.
    Week,
    /// The last 31 days.
    Month,
    /// The last 365 days.
    Year,
}

impl Freshness {
    /// Parses `day`, `week`, `month` or `year`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "day" | "d" | "pd" => Some(Self::Day),
            "week" | "w" | "pw" => Some(Self::Week),
            "month" | "m" | "pm" => Some(Self::Month),
            "year" | "y" | "py" => Some(Self::Year),
            _ => None,
        }
    }

    /// `day`, `week`, `month` or `year` (Tavily's `time_range` and SearXNG's too).
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::Year => "year",
        }
    }
}

/// One search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// What to look for.
    pub query: String,
    /// How many results (1–10).
    pub count: u8,
    /// Only results this recent.
    pub freshness: Option<Freshness>,
    /// Results for this country (ISO 3166-1 alpha-2, `us`).
    pub country: Option<String>,
    /// Results in this language (ISO 639-1, `en`).
    pub language: Option<String>,
}

impl SearchRequest {
    /// Checks the fields and normalises the codes.
    ///
    /// # Errors
    /// [`SearchError::BadRequest`] saying which field is wrong and what it takes.
    pub fn checked(mut self) -> Result<Self, SearchError> {
        self.query = self.query.trim().to_string();
        if self.query.is_empty() {
            return Err(SearchError::BadRequest("the query is empty".into()));
        }
        if self.query.chars().count() > 400 {
            return Err(SearchError::BadRequest(
                "the query is over 400 characters; search for fewer words".into(),
            ));
        }
        if !(1..=MAX_COUNT).contains(&self.count) {
            return Err(SearchError::BadRequest(format!(
                "count must be 1 to {MAX_COUNT}, not {}",
                self.count
            )));
        }
        for (field, value, len) in [
            ("country", &mut self.country, 2),
            ("language", &mut self.language, 2),
        ] {
            if let Some(code) = value {
                let lower = code.trim().to_ascii_lowercase();
                if lower.len() != len || !lower.chars().all(|c| c.is_ascii_lowercase()) {
                    return Err(SearchError::BadRequest(format!(
                        "{field} takes a two-letter code (like {}), not '{code}'",
                        if field == "country" {
                            "us or de"
                        } else {
                            "en or de"
                        }
                    )));
                }
                *code = lower;
            }
        }
        Ok(self)
    }

    fn cache_key(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.query,
            self.count,
            self.freshness.map_or("", Freshness::as_str),
            self.country.as_deref().unwrap_or(""),
            self.language.as_deref().unwrap_or("")
        )
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The page's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// The provider's excerpt.
    pub snippet: String,
    /// When it was published, as the provider says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
}

/// A search's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// The provider that answered.
    pub provider: String,
    /// Its results, at most the count asked for.
    pub results: Vec<SearchHit>,
    /// Whether the answer was kept from an earlier search (within 15 minutes).
    #[serde(default)]
    pub cached: bool,
    /// Providers tried before it, and why each was passed over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<String>,
}

/// Why a search gave no results.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The request itself is wrong.
    #[error("{0}")]
    BadRequest(String),
    /// `[tools.web.search] providers` names a provider LurkBot does not know.
    #[error(
        "[tools.web.search] providers lists '{0}', which is not a provider; use brave, tavily, searxng or duckduckgo"
    )]
    UnknownProvider(String),
    /// No provider answered.
    #[error("no search provider answered: {}", .0.join("; "))]
    AllFailed(Vec<String>),
}

impl SearchError {
    /// A stable code for scripts and the model.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "InvalidArgs",
            Self::UnknownProvider(_) => "InvalidConfig",
            Self::AllFailed(_) => "SearchUnavailable",
        }
    }
}

static CACHE: TtlCache = TtlCache::new(64, 1 << 20);

/// Searches: the cache first, then each provider in order until one answers.
///
/// # Errors
/// A [`SearchError`] naming what was tried and what to set.
pub async fn search(
    home: &Home,
    config: &Config,
    request: SearchRequest,
    session: &str,
) -> Result<Found, SearchError> {
    let request = request.checked()?;
    let settings = &config.tools.web.search;
    let keys = Keys::from_home(home);
    let order = provider::order(settings, &keys)?;
    let key = request.cache_key();
    if let Some(kept) = CACHE.get(&key, Instant::now())
        && let Ok(mut found) = serde_json::from_str::<Found>(&kept)
    {
        found.cached = true;
        log(
            home,
            session,
            &request,
            &found.provider,
            Ok(found.results.len()),
            true,
        );
        return Ok(found);
    }
    let mut passed_over = Vec::new();
    let client = match wire::client(settings) {
        Ok(client) => client,
        Err(failure) => return Err(SearchError::AllFailed(vec![failure.to_string()])),
    };
    for provider in order {
        match provider.ask(&client, settings, &keys, &request).await {
            Ok(mut results) => {
                results.truncate(usize::from(request.count));
                let found = Found {
                    provider: provider.name().to_string(),
                    results,
                    cached: false,
                    passed_over,
                };
                if let Ok(text) = serde_json::to_string(&found) {
                    CACHE.put(&key, &text, Instant::now());
                }
                log(
                    home,
                    session,
                    &request,
                    provider.name(),
                    Ok(found.results.len()),
                    false,
                );
                return Ok(found);
            }
            Err(failure) => {
                tracing::info!(provider = provider.name(), %failure, "search provider passed over");
                passed_over.push(format!("{}: {failure}", provider.name()));
            }
        }
    }
    let error = SearchError::AllFailed(passed_over);
    log(home, session, &request, "", Err(&error.to_string()), false);
    Err(error)
}

fn log(
    home: &Home,
    session: &str,
    request: &SearchRequest,
    provider: &str,
    outcome: Result<usize, &str>,
    cached: bool,
) {
    super::log::record(
        home,
        &super::log::WebRecord {
            session,
            tool: "web_search",
            target: &request.query,
            provider,
            count: outcome.ok(),
            error: outcome.err(),
            cached,
        },
    );
}
