//! Choosing the models and reading provider variables, shared by the CLI and the gateway.
//!
//! The model comes from an explicit choice (a flag), else `LURKBOT_MODEL`, else `agent.model`
//! in config.toml; `agent.fallbacks` follow it. Provider variables (`OPENAI_API_KEY`,
//! `OPENAI_BASE_URL`, …) are read from the environment, then from the home's `.env` file.

use lurkbot_core::{Config, Home, layout};
use lurkbot_llm::{Failover, ModelRef};

use crate::error::AgentError;

/// What to say when no model is configured.
pub const NO_MODEL: &str = "no model is configured. Set one, e.g.:\n  export LURKBOT_MODEL=openai/gpt-4o-mini   (key: OPENAI_API_KEY in the environment or the home's .env)\n  lurkbot config set agent.model anthropic/claude-sonnet-4-5\nAny OpenAI-compatible server works via OPENAI_BASE_URL (Ollama, vLLM, llama-server …).";

/// Variables from the environment, then the home's `.env`.
pub fn variables(home: &Home) -> impl Fn(&str) -> Option<String> + Send + Sync + use<> {
    let file: Vec<(String, String)> = std::fs::read_to_string(home.join(".env"))
        .map(|text| {
            lurkbot_core::dotenv::parse(&text)
                .into_iter()
                .filter_map(Result::ok)
                .collect()
        })
        .unwrap_or_default();
    move |name: &str| {
        std::env::var(name)
            .ok()
            .or_else(|| file.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }
}

/// The models to try: the primary one, then the fallbacks.
///
/// # Errors
/// `Config` with [`NO_MODEL`] when none is configured, or a malformed model name.
pub fn models(choice: Option<&str>, config: &Config) -> Result<Vec<ModelRef>, AgentError> {
    let primary = choice
        .map(str::to_string)
        .or_else(|| {
            std::env::var("LURKBOT_MODEL")
                .ok()
                .filter(|m| !m.trim().is_empty())
        })
        .or_else(|| config.agent.model.clone())
        .ok_or_else(|| AgentError::Config(NO_MODEL.into()))?;
    std::iter::once(primary)
        .chain(config.agent.fallbacks.iter().cloned())
        .map(|m| {
            m.parse::<ModelRef>()
                .map_err(|source| AgentError::InvalidModel {
                    model: m.clone(),
                    source,
                })
        })
        .collect()
}

/// The failover chain for `home`, with auth-profile state in `auth/profiles.json`.
///
/// # Errors
/// `Config` as [`models`]; `Model` when a provider cannot be set up.
pub fn failover(
    home: &Home,
    config: &Config,
    choice: Option<&str>,
) -> Result<Failover, AgentError> {
    let models = models(choice, config)?;
    Ok(Failover::new(
        models,
        &variables(home),
        Some(home.join(layout::AUTH).join("profiles.json")),
    )?)
}
