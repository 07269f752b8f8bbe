//! Reading the web (ARCHITECTURE.md §5.2): searches through the configured providers, pages as
//! articles, both cached 15 minutes (bounded) and written to the web log. The tools and
//! `lurkbot search` share these functions.

pub mod article;
mod cache;
pub mod download;
pub mod fetch;
mod log;
pub mod search;

pub use log::WEB_LOG;

/// The client for URLs the owner wrote in the settings — search providers, speech and
/// transcription servers — which go where they say (the gate's `UrlFrom::Settings`, §4.6): the
/// process's TLS set-up, LurkBot's user agent, `timeout` for the whole request, at most three
/// redirects.
///
/// # Errors
/// When no client can be made (the TLS set-up failed).
pub fn settings_client(timeout: std::time::Duration) -> Result<reqwest::Client, String> {
    lurkbot_term::http_client_builder()
        .user_agent(concat!("LurkBot/", env!("CARGO_PKG_VERSION")))
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}
