//! What makes a `config.toml` wrong beyond its types: keys LurkBot does not know (a typo such as
//! `approvals.confrim` would otherwise be ignored in silence) with a "did you mean", and values
//! that contradict each other. `lurkbot config set` refuses both; `lurkbot doctor` reports them.

use std::path::Path;

use crate::{Config, ConfigError};

/// Settings whose keys are names the user chooses (agents, providers, models, MCP servers…):
/// anything below them is the user's, not a typo.
const FREE_FORM: &[&str] = &[
    "agents",
    "tools.by_provider",
    "models",
    "mcp",
    "channels",
    "plugins",
];

/// One problem found in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The dotted key.
    pub key: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl Config {
    /// Parses `text` and lists its problems: unknown keys (with the closest known key) and
    /// contradictory values.
    ///
    /// # Errors
    /// [`ConfigError`] when the text is not a valid config at all.
    pub fn check(file: &Path, text: &str) -> Result<(Self, Vec<ConfigProblem>), ConfigError> {
        let config = Self::parse(file, text)?;
        let mut problems = Vec::new();
        let known = known_keys();
        let mut unknown = Vec::new();
        if let Ok(table) = text.parse::<toml::Table>() {
            let set: std::collections::HashSet<&str> = known.iter().map(String::as_str).collect();
            unknown_keys(&table, "", &set, &mut unknown);
        }
        for key in unknown {
            if FREE_FORM.iter().any(|f| key.starts_with(&format!("{f}."))) {
                continue;
            }
            let message = match suggest(&key, &known) {
                Some(close) => format!("unknown key '{key}'; did you mean '{close}'?"),
                None => format!(
                    "unknown key '{key}'; the README's Configuration section lists the settings"
                ),
            };
            problems.push(ConfigProblem { key, message });
        }
        // The plugins installed beside the file: the channels they provide may be configured.
        let found = file.parent().map(crate::find_plugins).unwrap_or_default();
        problems.extend(config.contradictions(&found));
        Ok((config, problems))
    }

    /// Values that cannot work together or in the form given.
    fn contradictions(&self, found: &[crate::FoundPlugin]) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let agent = &self.agent;
        if agent.reserve_tokens >= agent.context_window {
            problems.push(ConfigProblem {
                key: "agent.reserve_tokens".into(),
                message: format!(
                    "agent.reserve_tokens ({}) must be smaller than agent.context_window ({}): nothing would be left for the conversation",
                    agent.reserve_tokens, agent.context_window
                ),
            });
        }
        for (key, model) in agent
            .model
            .iter()
            .map(|m| ("agent.model", m))
            .chain(agent.fallbacks.iter().map(|m| ("agent.fallbacks", m)))
        {
            let prefixed = model
                .split_once('/')
                .is_some_and(|(p, m)| !p.is_empty() && !m.is_empty());
            if !prefixed {
                problems.push(ConfigProblem {
                    key: key.into(),
                    message: format!(
                        "{key} '{model}' needs a provider prefix, e.g. {}",
                        prefix_examples(model)
                    ),
                });
            }
        }
        if let Some(name) = agent.timezone.as_deref()
            && let Err(e) = crate::Zone::of(Some(name))
        {
            problems.push(ConfigProblem {
                key: "agent.timezone".into(),
                message: format!("agent.timezone: {e}"),
            });
        }
        problems.extend(self.autonomy_problems());
        problems.extend(self.plugin_problems());
        problems.extend(self.budget_problems());
        let plugin_channels: Vec<String> = found
            .iter()
            .filter_map(|p| p.manifest.as_ref().ok())
            .flat_map(|m| m.channels().map(str::to_string).collect::<Vec<_>>())
            .collect();
        problems.extend(crate::channel_problems(self, &plugin_channels));
        problems.extend(self.plugins_problems(found));
        if let Err(message) = crate::LogConfig::check_filter(&self.log.level) {
            problems.push(ConfigProblem {
                key: "log.level".into(),
                message: format!("log.level: {message}"),
            });
        }
        problems
    }
}

impl Config {
    /// Whether agent `id` exists: `main`, or one configured as `[agents.<id>]`. A turn is
    /// run only under an agent that exists (a name from a request never names one into being).
    pub fn has_agent(&self, id: &str) -> bool {
        id == "main" || self.agents.contains_key(id)
    }

    /// `[heartbeat]` and `[agent.subagents]` values that cannot work.
    fn autonomy_problems(&self) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let mut problem = |key: &str, message: String| {
            problems.push(ConfigProblem {
                key: key.into(),
                message,
            });
        };
        if let Some(id) = self.gateway.id.as_deref()
            && !crate::valid_gateway_id(id)
        {
            problem(
                "gateway.id",
                format!(
                    "gateway.id '{id}' cannot name this gateway: use letters, digits, '-', '_' and '.' (at most 100, no leading dot)"
                ),
            );
        }
        for proxy in &self.gateway.trusted_proxies {
            if proxy.trim().parse::<std::net::IpAddr>().is_err() {
                problem(
                    "gateway.trusted_proxies",
                    format!(
                        "gateway.trusted_proxies: '{proxy}' is not an IP address; list each proxy's address, e.g. \"127.0.0.1\""
                    ),
                );
            }
        }
        if let Some(url) = self.state.url.as_deref().filter(|u| !u.trim().is_empty()) {
            let url = url.trim();
            let rest = url
                .strip_prefix("postgres://")
                .or_else(|| url.strip_prefix("postgresql://"));
            match rest {
                None => problem(
                    "state.url",
                    "state.url must be a PostgreSQL URL: postgres://user@host:5432/database".into(),
                ),
                Some(rest) => {
                    let authority = rest.split(['/', '?']).next().unwrap_or_default();
                    if authority
                        .rsplit_once('@')
                        .is_some_and(|(user, _)| user.contains(':'))
                    {
                        problem(
                            "state.url",
                            "state.url carries a password: remove it and put it in the home's .env as LURKBOT_STATE_PASSWORD (or the whole URL as LURKBOT_STATE_URL)".into(),
                        );
                    }
                }
            }
        }
        if let Some(listen) = self.metrics.listen.as_deref() {
            match listen.trim().parse::<std::net::SocketAddr>() {
                Ok(addr) if addr.ip().is_loopback() => {}
                Ok(addr) => problem(
                    "metrics.listen",
                    format!(
                        "metrics.listen {addr} is not a loopback address: /metrics there has no token, so only 127.0.0.1 or [::1] (or leave it unset and scrape the gateway's /metrics with its token)"
                    ),
                ),
                Err(_) => problem(
                    "metrics.listen",
                    format!("metrics.listen '{listen}' is not an address: write 127.0.0.1:9464"),
                ),
            }
        }
        if let Some(endpoint) = self
            .otel
            .endpoint
            .as_deref()
            .filter(|e| !e.trim().is_empty())
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            problem(
                "otel.endpoint",
                format!(
                    "otel.endpoint '{endpoint}' is not an OTLP/HTTP URL: write http://127.0.0.1:4318"
                ),
            );
        }
        let heartbeat = &self.heartbeat;
        if crate::parse_period_ms(&heartbeat.every).is_none() {
            problem(
                "heartbeat.every",
                format!(
                    "heartbeat.every '{}' is not a period: write 30s, 5m, 1h or 1d",
                    heartbeat.every
                ),
            );
        }
        if let Err(message) = heartbeat.active_hours.minutes() {
            problem(
                "heartbeat.active_hours",
                format!("heartbeat.active_hours: {message}"),
            );
        }
        if let Some(tz) = heartbeat.active_hours.tz.as_deref()
            && let Err(e) = crate::Zone::of(Some(tz))
        {
            problem(
                "heartbeat.active_hours.tz",
                format!("heartbeat.active_hours.tz: {e}"),
            );
        }
        let target = heartbeat.target.as_str();
        if !(["last", "none", "webchat", "irc"].contains(&target)
            || crate::CHANNEL_NAMES.contains(&target))
        {
            problem(
                "heartbeat.target",
                format!(
                    "heartbeat.target '{}' is not a target: write last, none, webchat, irc or {}",
                    heartbeat.target,
                    crate::CHANNEL_NAMES.join(", ")
                ),
            );
        }
        let subagents = &self.agent.subagents;
        if !(1..=5).contains(&subagents.max_depth) {
            problem(
                "agent.subagents.max_depth",
                format!(
                    "agent.subagents.max_depth is {}; it must be 1 to 5",
                    subagents.max_depth
                ),
            );
        }
        if !(1..=5).contains(&subagents.max_children) {
            problem(
                "agent.subagents.max_children",
                format!(
                    "agent.subagents.max_children is {}; it must be 1 to 5",
                    subagents.max_children
                ),
            );
        }
        problems
    }
}

/// Every dotted key of the typed config (from its defaults).
fn known_keys() -> Vec<String> {
    let mut keys = Vec::new();
    if let Ok(value) = serde_json::to_value(Config::default()) {
        collect(&value, "", &mut keys);
    }
    keys
}

/// The keys of `table` (below `prefix`) that are not settings: a table with known keys below
/// it is walked into, any other known key ends the walk (its value's type is the parser's
/// business), anything else is unknown. A walk of the parsed file rather than a second deserialization
/// through `serde_ignored`, which cost the binary a quarter of a megabyte of monomorphized code.
fn unknown_keys(
    table: &toml::Table,
    prefix: &str,
    known: &std::collections::HashSet<&str>,
    out: &mut Vec<String>,
) {
    for (name, value) in table {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let below = format!("{key}.");
        match value {
            toml::Value::Table(inner) if known.iter().any(|k| k.starts_with(&below)) => {
                unknown_keys(inner, &key, known, out);
            }
            _ if known.contains(key.as_str()) => {}
            _ => out.push(key),
        }
    }
}

fn collect(value: &serde_json::Value, prefix: &str, keys: &mut Vec<String>) {
    if let serde_json::Value::Object(map) = value {
        for (k, v) in map {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            keys.push(key.clone());
            collect(v, &key, keys);
        }
    }
}

/// The known key closest to `key` (edit distance at most 3, and less than half its length).
fn suggest<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::levenshtein(key, k), k))
        .filter(|(d, _)| *d <= 3 && *d * 2 < key.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// The provider prefixes a bare model name probably wants: OpenAI's and Anthropic's own model
/// families by name, either for anything else.
fn prefix_examples(model: &str) -> String {
    let lower = model.to_ascii_lowercase();
    if lower.starts_with("claude") {
        format!("anthropic/{model}")
    } else if ["gpt", "o1", "o3", "o4", "chatgpt"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        format!("openai/{model}")
    } else {
        format!(
            "openai/{model} (OpenAI or any OpenAI-compatible server: Ollama, llama.cpp, vLLM) or anthropic/{model}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        Config::check(Path::new("config.toml"), text)
            .map(|(_, p)| p.into_iter().map(|p| p.message).collect())
            .unwrap_or_default()
    }

    #[test]
    fn a_gateway_id_and_proxies_that_cannot_work_are_named() {
        let found = problems(
            "[gateway]\nid = \"../up\"\ntrusted_proxies = [\"proxy.lan\", \"10.0.0.2\"]\n",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found.iter().any(|p| p.contains("gateway.id '../up'")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.contains("'proxy.lan' is not an IP address")),
            "{found:?}"
        );
        assert!(problems("[gateway]\nid = \"gw-a\"\ntrusted_proxies = [\"::1\"]\n").is_empty());
    }

    #[test]
    fn a_state_url_with_a_password_or_another_scheme_is_named() {
        let found = problems("[state]\nurl = \"postgres://lurk:pw@db.lan/lb\"\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("LURKBOT_STATE_PASSWORD"), "{found:?}");
        assert!(!found[0].contains("pw@"), "{found:?}");
        let found = problems("[state]\nurl = \"mysql://lurk@db.lan/lb\"\n");
        assert!(found[0].contains("PostgreSQL URL"), "{found:?}");
        assert!(
            problems("[state]\nurl = \"postgres://lurk@db.lan:5432/lb?sslmode=require\"\n")
                .is_empty()
        );
    }

    #[test]
    fn typos_get_a_suggestion() {
        let found = problems("[approvals]\nconfrim = false\n[gateway]\nprot = 1\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].contains("did you mean 'approvals.confirm'"),
            "{found:?}"
        );
        assert!(
            found[1].contains("did you mean 'gateway.port'"),
            "{found:?}"
        );
        assert!(problems("[zzz]\nqqqqqqq = 1\n")[0].contains("unknown key 'zzz'"));
    }

    #[test]
    fn free_form_tables_and_valid_files_pass() {
        let ok = "[agent]\nmodel = \"openai/gpt-4o-mini\"\n[agents.work.tools]\nallow = [\"read\"]\n[tools.by_provider.\"openai/gpt-4o\"]\nprofile = \"minimal\"\n[network]\nallow_hosts = [\"a\"]\n";
        assert_eq!(problems(ok), Vec::<String>::new());
    }

    #[test]
    fn contradictions_are_reported() {
        let found =
            problems("[agent]\nmodel = \"gpt-4o\"\ncontext_window = 4096\nreserve_tokens = 4096\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().any(|m| m.contains("must be smaller")));
        assert!(found.iter().any(|m| m.contains("openai/gpt-4o")));
    }
}
