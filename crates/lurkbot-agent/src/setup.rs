//! Choosing the models and reading provider variables, shared by the CLI and the gateway.
//!
//! The model comes from an explicit choice (a flag), else `LURKBOT_MODEL`, else `agent.model`
//! in config.toml; `agent.fallbacks` follow it. Provider variables (`OPENAI_API_KEY`,
//! `OPENAI_BASE_URL`, …) are read from the environment, then from the home's `.env` file.

use lurkbot_core::{Config, Home, layout};
use lurkbot_llm::{Failover, ModelRef};

use crate::error::AgentError;

/// What to say when no model is configured.
pub const NO_MODEL: &str = "no model is configured. Run `lurkbot setup`: it finds a model server on this machine (Ollama, llama.cpp's server, LM Studio; no key needed) or asks for a provider and key, checks them, and tells a running gateway. Or set one by hand:\n  lurkbot config set agent.model openai/gpt-4o-mini   (key: OPENAI_API_KEY in the home's .env)\n  export LURKBOT_MODEL=anthropic/claude-sonnet-4-5     (key: ANTHROPIC_API_KEY)\nAny OpenAI-compatible server works via OPENAI_BASE_URL (Ollama, vLLM, llama-server …).";

/// Variables from the environment, then the home's `.env`, then (for a user's home on a
/// shared gateway) the gateway home's `.env`: the provider keys the admin shares.
pub fn variables(home: &Home) -> impl Fn(&str) -> Option<String> + Send + Sync + use<> {
    let read = |dir: &std::path::Path| -> Vec<(String, String)> {
        std::fs::read_to_string(dir.join(".env"))
            .map(|text| {
                lurkbot_core::dotenv::parse(&text)
                    .into_iter()
                    .filter_map(Result::ok)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut file = read(home.root());
    if let Some(shared) = home.shared() {
        file.extend(read(shared));
    }
    move |name: &str| {
        std::env::var(name)
            .ok()
            .or_else(|| file.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }
}

/// Opens the gateway's durable state where `[state] url` or `LURKBOT_STATE_URL` (the
/// environment, then the home's `.env`) puts it — a PostgreSQL database — or else the home's
/// embedded store; as gateway `owner`, or for a command (`None`). A store on PostgreSQL keeps
/// the home's usage records and the budget holds of its calls in flight while it is open, so
/// that the gateways on it count and check against each other's
/// ([`crate::shared_state`]).
///
/// # Errors
/// The URL unusable, the database unreachable, the id taken (see [`lurkbot_state::Store`]).
pub fn open_state(
    home: &Home,
    config: &lurkbot_core::Config,
    owner: Option<&str>,
) -> Result<lurkbot_state::Store, lurkbot_state::StateError> {
    let location = state_location(home, config)?;
    let store = lurkbot_state::Store::open_at(home, &location, owner)?;
    if store.backend() == "postgres" {
        crate::shared_state::share(home, &store);
    }
    Ok(store)
}

/// For a command working on `home` outside the gateway (`lurkbot agent`, `lurkbot usage`):
/// when the state is in PostgreSQL, opens it for the rest of the process, so the command's
/// usage records and budget checks are the gateways' ([`crate::shared_state::share`]);
/// nothing for the embedded store (the records are the home's files).
///
/// # Errors
/// The URL unusable, the database unreachable.
pub fn attach_state(
    home: &Home,
    config: &lurkbot_core::Config,
) -> Result<(), lurkbot_state::StateError> {
    static KEPT: std::sync::Mutex<Vec<lurkbot_state::Store>> = std::sync::Mutex::new(Vec::new());
    if matches!(
        state_location(home, config)?,
        lurkbot_state::Location::Embedded
    ) {
        return Ok(());
    }
    let store = open_state(home, config, None)?;
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(store);
    Ok(())
}

/// Where the durable state is: [`open_state`]'s choice, without opening it.
///
/// # Errors
/// The URL unusable.
pub fn state_location(
    home: &Home,
    config: &lurkbot_core::Config,
) -> Result<lurkbot_state::Location, lurkbot_state::StateError> {
    let vars = variables(home);
    lurkbot_state::Location::resolve(config.state.url.as_deref(), &vars)
}

/// A provider's variables and public endpoint.
pub struct ProviderVars {
    /// The key's variable (`OPENAI_API_KEY`).
    pub key: &'static str,
    /// The base URL's variable (`OPENAI_BASE_URL`).
    pub base: &'static str,
    /// The public endpoint.
    pub default_base: &'static str,
    /// A model to suggest.
    pub default_model: &'static str,
}

/// The variables of `provider` (`openai`: any OpenAI-compatible server; `anthropic`).
pub fn provider_vars(provider: &str) -> Option<ProviderVars> {
    match provider {
        "openai" => Some(ProviderVars {
            key: "OPENAI_API_KEY",
            base: "OPENAI_BASE_URL",
            default_base: "https://api.openai.com/v1",
            default_model: "gpt-4o-mini",
        }),
        "anthropic" => Some(ProviderVars {
            key: "ANTHROPIC_API_KEY",
            base: "ANTHROPIC_BASE_URL",
            default_base: "https://api.anthropic.com",
            default_model: "claude-sonnet-4-5",
        }),
        _ => None,
    }
}

/// Chooses the model as the owner asked (`lurkbot setup`, the web UI's welcome card):
/// `agent.model` in config.toml, the base URL and (when given) the key in the home's `.env`
/// (0600). Everything is checked before anything is written; the key is never echoed.
///
/// # Errors
/// An unknown provider, a model that does not parse, a value with a control character, or the
/// files failing — in words for the owner.
pub fn write_model_choice(
    home: &Home,
    provider: &str,
    model: &str,
    base_url: &str,
    key: Option<&str>,
) -> Result<String, String> {
    let vars = provider_vars(provider)
        .ok_or_else(|| format!("unknown provider '{provider}': openai or anthropic"))?;
    let model_ref = format!("{provider}/{}", model.trim());
    model_ref
        .parse::<ModelRef>()
        .map_err(|e| format!("{model_ref}: {e}"))?;
    let key = key.map(str::trim).filter(|k| !k.is_empty());
    let mut pairs = vec![(vars.base, base_url.trim())];
    if let Some(key) = key {
        pairs.push((vars.key, key));
    }
    for (name, value) in &pairs {
        if lurkbot_core::dotenv::assignment(name, value).is_none() {
            return Err(format!(
                "{name}: the value holds a control character (a line break?); nothing was written"
            ));
        }
    }
    let mut doc =
        lurkbot_core::ConfigDoc::load(&home.join(layout::CONFIG)).map_err(|e| e.to_string())?;
    doc.set("agent.model", &format!("\"{model_ref}\""))
        .map_err(|e| e.to_string())?;
    doc.save().map_err(|e| e.to_string())?;
    lurkbot_core::dotenv::set_in_file(&home.join(".env"), &pairs)?;
    Ok(model_ref)
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
