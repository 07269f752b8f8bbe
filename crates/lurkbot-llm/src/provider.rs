//! Which provider and model, where it lives, and its keys (auth profiles).
//!
//! `openai` reads `OPENAI_BASE_URL` (default `https://api.openai.com/v1`) and the keys
//! `OPENAI_API_KEY`, `OPENAI_API_KEY_2` … `OPENAI_API_KEY_9`; `anthropic` reads
//! `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`) and `ANTHROPIC_API_KEY[_2…_9]`.
//! Each key is one auth profile, named by its variable (never by its value). A provider without
//! a key still works against servers that need none (Ollama, llama-server).

use std::fmt;
use std::str::FromStr;

use crate::error::{ErrorKind, LlmError};
use crate::types::{ChatRequest, ChatResponse, StreamEvent};

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderKind {
    /// OpenAI Chat Completions (and compatible servers).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// The name used in `provider/model`.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    fn env_prefix(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI",
            Self::Anthropic => "ANTHROPIC",
        }
    }

    fn default_base(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }
}

/// `provider/model`, e.g. `openai/gpt-4o-mini` (the model part may contain `/`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    /// Wire format.
    pub provider: ProviderKind,
    /// The model's name at the provider.
    pub model: String,
}

impl FromStr for ModelRef {
    type Err = LlmError;

    fn from_str(raw: &str) -> Result<Self, LlmError> {
        let bad = || {
            LlmError::new(
                ErrorKind::NotConfigured,
                format!(
                    "'{raw}' is not <provider>/<model> with provider openai or anthropic (e.g. openai/gpt-4o-mini)"
                ),
            )
        };
        let (provider, model) = raw.trim().split_once('/').ok_or_else(bad)?;
        let provider = match provider.to_ascii_lowercase().as_str() {
            "openai" => ProviderKind::OpenAi,
            "anthropic" => ProviderKind::Anthropic,
            _ => return Err(bad()),
        };
        if model.trim().is_empty() {
            return Err(bad());
        }
        Ok(Self {
            provider,
            model: model.trim().to_string(),
        })
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider.name(), self.model)
    }
}

/// One key of a provider.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthProfile {
    /// The variable it came from (`OPENAI_API_KEY_2`): the profile's name in state and logs.
    pub name: String,
    /// The key itself (never printed).
    pub key: Option<String>,
}

impl fmt::Debug for AuthProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthProfile")
            .field("name", &self.name)
            .field("key", &self.key.as_ref().map(|_| "***"))
            .finish()
    }
}

/// A provider's address and profiles.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Wire format.
    pub kind: ProviderKind,
    /// Base URL.
    pub base_url: String,
    /// Keys in rotation order (one nameless profile when no key is set).
    pub profiles: Vec<AuthProfile>,
}

impl Endpoint {
    /// Reads the endpoint from variables (`lookup` is the environment, possibly merged with a
    /// `.env` file).
    pub fn from_vars(kind: ProviderKind, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let prefix = kind.env_prefix();
        let base_url = lookup(&format!("{prefix}_BASE_URL"))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| kind.default_base().to_string());
        let mut profiles: Vec<AuthProfile> = std::iter::once(format!("{prefix}_API_KEY"))
            .chain((2..=9).map(|n| format!("{prefix}_API_KEY_{n}")))
            .filter_map(|name| {
                let key = lookup(&name)
                    .map(|k| k.trim().to_string())
                    .filter(|k| !k.is_empty())?;
                Some(AuthProfile {
                    name,
                    key: Some(key),
                })
            })
            .collect();
        if profiles.is_empty() {
            profiles.push(AuthProfile {
                name: format!("{prefix}_API_KEY"),
                key: None,
            });
        }
        Self {
            kind,
            base_url,
            profiles,
        }
    }

    /// One streamed request with one profile's key.
    ///
    /// # Errors
    /// Classified provider failures.
    pub async fn chat(
        &self,
        http: &reqwest::Client,
        profile: &AuthProfile,
        request: &ChatRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ChatResponse, LlmError> {
        let key = profile.key.as_deref();
        let result = match self.kind {
            ProviderKind::OpenAi => {
                crate::openai::chat(http, &self.base_url, key, request, on_event).await
            }
            ProviderKind::Anthropic => {
                crate::anthropic::chat(http, &self.base_url, key, request, on_event).await
            }
        };
        result.map_err(|mut e| {
            // Some providers echo (part of) the key in their error text.
            if let Some(key) = key.filter(|k| k.len() >= 4) {
                e.message = e.message.replace(key, "***");
            }
            if e.kind == ErrorKind::Auth {
                e.message = format!(
                    "{} (profile {}: check the key in the environment or the home's .env)",
                    e.message, profile.name
                );
            }
            e
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_refs() {
        let m: ModelRef = "openai/meta-llama/llama-3".parse().unwrap();
        assert_eq!(m.provider, ProviderKind::OpenAi);
        assert_eq!(m.model, "meta-llama/llama-3");
        assert_eq!(m.to_string(), "openai/meta-llama/llama-3");
        for bad in ["gpt-4o", "google/gemini", "openai/", ""] {
            assert_eq!(
                bad.parse::<ModelRef>().unwrap_err().kind,
                ErrorKind::NotConfigured
            );
        }
    }

    #[test]
    fn profiles_come_from_numbered_variables() {
        let vars = |name: &str| match name {
            "OPENAI_API_KEY" => Some("k1".to_string()),
            "OPENAI_API_KEY_3" => Some("k3".to_string()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:8081/v1".to_string()),
            _ => None,
        };
        let e = Endpoint::from_vars(ProviderKind::OpenAi, &vars);
        assert_eq!(e.base_url, "http://127.0.0.1:8081/v1");
        let names: Vec<_> = e.profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["OPENAI_API_KEY", "OPENAI_API_KEY_3"]);
        assert!(!format!("{:?}", e).contains("k3"));
        let none = Endpoint::from_vars(ProviderKind::Anthropic, &|_| None);
        assert_eq!(none.base_url, "https://api.anthropic.com");
        assert_eq!(none.profiles.len(), 1);
        assert!(none.profiles[0].key.is_none());
    }
}
