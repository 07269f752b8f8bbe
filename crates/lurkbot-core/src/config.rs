//! The typed view of `config.toml`. Unknown keys are kept and ignored, so a file written for a
//! newer LurkBot still loads; known keys are type-checked and a bad value is reported with the
//! file, line and dotted key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{MediaToolsConfig, WebConfig, WebFetchConfig};

/// Settings read from `config.toml` (all sections optional).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Config {
    /// `[agent]`: model selection.
    pub agent: AgentConfig,
    /// `[gateway]`: bind address, port and auth.
    pub gateway: GatewayConfig,
    /// `[permissions]`: explicit grants (what Android asks at run time).
    pub permissions: Permissions,
    /// `[calendar]`: backend choice for the `cal` command.
    pub calendar: CalendarConfig,
    /// `[tools]`: the global layer of the tool policy.
    pub tools: ToolsConfig,
    /// `[agents.<id>]`: per-agent overrides.
    pub agents: BTreeMap<String, AgentOverride>,
    /// `[approvals]`: which tool calls wait for a human decision.
    pub approvals: ApprovalsConfig,
    /// `[network]`: where URLs from command and tool arguments may go (ARCHITECTURE.md §4.6).
    pub network: NetworkConfig,
    /// `[log]`: the gateway's log level and log file rotation.
    pub log: LogConfig,
    /// `[heartbeat]`: the periodic check of `workspace/HEARTBEAT.md`.
    pub heartbeat: crate::HeartbeatConfig,
    /// `[cron]`: what the scheduler does with runs missed while the gateway was down.
    pub cron: crate::CronConfig,
    /// `[memory]`: the embedder of long-term memory search.
    pub memory: crate::MemoryConfig,
    /// `[mcp]`: MCP servers whose tools the agent may call.
    pub mcp: crate::McpConfig,
    /// `[budgets]`: caps on model spending, checked before every call.
    pub budgets: crate::BudgetsConfig,
    /// `[models."<provider>/<model>"]`: prices, for the cost of usage records.
    pub models: BTreeMap<String, crate::ModelPrice>,
    /// `[channels.<name>]`: messaging platforms the gateway connects to (LurkBot's own, and
    /// those plugins provide).
    pub channels: BTreeMap<String, crate::ChannelConfig>,
    /// `[plugins.<name>]`: the plugins installed under `plugins/` the gateway starts, and
    /// their settings.
    pub plugins: BTreeMap<String, crate::PluginSettings>,
    /// `[[bindings]]`: which agent answers which channel, sender or group.
    pub bindings: Vec<crate::Binding>,
    /// `[session]`: how channel conversations map to sessions.
    pub session: crate::SessionConfig,
    /// `[browser]`: the managed Chromium of the `browser` tool.
    pub browser: crate::BrowserConfig,
    /// `[tts]`: speaking (the `tts` tool, voice answers on channels).
    pub tts: crate::TtsConfig,
    /// `[stt]`: hearing voice notes.
    pub stt: crate::SttConfig,
    /// `[nodes]`: node commands the model may run without asking.
    pub nodes: crate::NodesConfig,
    /// `[users]`: several people sharing this gateway, each with their own home.
    pub users: crate::UsersConfig,
    /// `[state]`: a PostgreSQL database several gateways share, or (unset) the home.
    pub state: crate::StateConfig,
    /// `[metrics]`: Prometheus' `/metrics`.
    pub metrics: crate::MetricsConfig,
    /// `[otel]`: OpenTelemetry traces.
    pub otel: crate::OtelConfig,
    /// Where `budgets` came from when it is not `[budgets]` (a user's caps on a shared
    /// gateway: `users.budgets`), so a refusal names the key to raise. Never read from a file.
    #[serde(skip)]
    pub budgets_key: Option<String>,
}

/// `[log]`: what the gateway logs and how much of it is kept.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct LogConfig {
    /// `error`, `warn`, `info` (default), `debug` or `trace`, optionally per module
    /// (`info,lurkbot_gateway=debug`); `LURKBOT_LOG` overrides it.
    pub level: String,
    /// Size at which `logs/gateway.log` is rotated (default 10,000,000 bytes).
    pub max_file_bytes: u64,
    /// Rotated files kept beside the current one (default 5).
    pub keep_files: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".into(),
            max_file_bytes: 10_000_000,
            keep_files: 5,
        }
    }
}

/// Keys a running gateway reads only when it starts: a reload names them as needing a restart.
pub const RESTART_KEYS: &[&str] = &[
    "gateway.bind",
    "gateway.port",
    "gateway.token",
    "gateway.auth",
    "gateway.max_connections",
    "log.max_file_bytes",
    "log.keep_files",
    // The MCP servers are started with the gateway (any key below `mcp`).
    "mcp",
];

/// The level names a log filter may use.
pub const LOG_LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

impl LogConfig {
    /// Checks a filter such as `info` or `warn,lurkbot_gateway=debug`.
    ///
    /// # Errors
    /// What is wrong, naming the level names allowed.
    pub fn check_filter(filter: &str) -> Result<(), String> {
        for part in filter.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let level = part.rsplit_once('=').map_or(part, |(_, l)| l);
            if !LOG_LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
                return Err(format!(
                    "'{part}' is not a log level: use one of {} (optionally per module, e.g. info,lurkbot_gateway=debug)",
                    LOG_LEVELS.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// `[network]`: the network policy for URLs that come from command or tool arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct NetworkConfig {
    /// Allow loopback, private, link-local and every other non-public address (default false).
    pub allow_private: bool,
    /// Hosts allowed whatever they resolve to: `name`, `name:port`, `ip` or `ip:port`.
    pub allow_hosts: Vec<String>,
}

impl Config {
    /// Whether non-public addresses are allowed: `[network] allow_private`, or its older alias
    /// `[tools.web_fetch] allow_private`.
    pub fn allow_private_network(&self) -> bool {
        self.network.allow_private || self.tools.web_fetch.allow_private
    }
}

/// `[agent]` settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct AgentConfig {
    /// `<provider>/<model>`, e.g. `openai/gpt-4o-mini`.
    pub model: Option<String>,
    /// Models tried in order when the primary one fails.
    pub fallbacks: Vec<String>,
    /// The model's context window in tokens (compaction starts below it).
    pub context_window: u64,
    /// Tokens kept free for the reply; compaction runs above `context_window - reserve_tokens`.
    pub reserve_tokens: u64,
    /// System prompt mode: `full` (default), `minimal` or `none`.
    pub prompt_mode: PromptMode,
    /// Most tokens one reply may have (`max_tokens` of each request); by default a quarter of
    /// the window, at most `reserve_tokens` and 4,096, so a runaway reply cannot fill it.
    pub max_output_tokens: Option<u64>,
    /// The user's time zone (IANA name, e.g. `Europe/Berlin`): calendar times are shown in it
    /// and times written without an offset are read in it. Default: the system's (`TZ`, else
    /// `/etc/localtime`), else UTC.
    pub timezone: Option<String>,
    /// `[agent.subagents]`: limits of `sessions_spawn`.
    pub subagents: crate::SubagentsConfig,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            model: None,
            fallbacks: Vec::new(),
            context_window: 128_000,
            reserve_tokens: 16_384,
            prompt_mode: PromptMode::Full,
            max_output_tokens: None,
            timezone: None,
            subagents: crate::SubagentsConfig::default(),
        }
    }
}

/// How much the system prompt says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum PromptMode {
    /// Every section (main sessions).
    #[default]
    Full,
    /// Tooling, safety, workspace and runtime only (sub-agents).
    Minimal,
    /// One identity line.
    None,
}

/// `[agents.<id>]`: settings for one agent.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct AgentOverride {
    /// `[agents.<id>.tools]`: the agent's policy layer (and its `by_provider` tables).
    pub tools: ToolLayerConfig,
    /// Sandbox mode for this agent (overrides `tools.sandbox`).
    pub sandbox: Option<SandboxMode>,
    /// `[agents.<id>.budgets]`: this agent's own caps (the global ones still apply).
    pub budgets: crate::BudgetsConfig,
}

/// One layer of the tool policy as configured.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ToolLayerConfig {
    /// A profile that narrows this layer.
    pub profile: Option<String>,
    /// Tool names or patterns allowed (empty: no narrowing).
    pub allow: Vec<String>,
    /// Tool names or patterns denied (deny wins).
    pub deny: Vec<String>,
    /// Per provider (`openai`) or per model (`openai/gpt-4o-mini`).
    pub by_provider: BTreeMap<String, ToolLayerConfig>,
}

/// When tools run sandboxed (no terminal, no file changes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Never (default).
    #[default]
    Off,
    /// Every session but the agent's main one.
    NonMain,
    /// Every session.
    All,
}

/// `[approvals]`: tool calls that wait for a human.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ApprovalsConfig {
    /// Every `terminal_exec` command carrying `--confirm` needs approval (default true).
    pub confirm: bool,
    /// Tool names or patterns that always need approval (e.g. `write`, `apply_patch`).
    pub tools: Vec<String>,
    /// Terminal command prefixes that need approval (e.g. `irc send`, `zip`).
    pub commands: Vec<String>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            confirm: true,
            tools: Vec::new(),
            commands: Vec::new(),
        }
    }
}

/// `[gateway]` settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct GatewayConfig {
    /// Address to bind; loopback by default.
    pub bind: String,
    /// TCP port.
    pub port: u16,
    /// Shared token clients present (generated by `lurkbot init`).
    pub token: Option<String>,
    /// `token` (default) or `none` (loopback only).
    pub auth: GatewayAuth,
    /// Browser origins allowed besides the gateway's own (e.g. `https://app.example`).
    pub allowed_origins: Vec<String>,
    /// `Host` names accepted besides the bind address and `localhost` (DNS rebinding guard).
    pub allowed_hosts: Vec<String>,
    /// Most connections open at once (default 4096).
    pub max_connections: usize,
    /// Seconds a stopping gateway (SIGTERM, `systemctl restart`, Ctrl-C) gives the turns that
    /// are running to finish, while new work is answered 503 with `Retry-After` (default 20;
    /// 0 stops at once, cancelling them).
    pub shutdown_grace_secs: u64,
    /// This gateway's id: the leases it holds on unended turns carry it, and `status` shows it
    /// (default: the host name and a random suffix, new at each start). Letters, digits, `-`,
    /// `_` and `.`; each gateway on one home needs its own.
    pub id: Option<String>,
    /// Addresses of load balancers in front (`["127.0.0.1"]`): a request from one is taken to
    /// come from the client its `X-Forwarded-For` names (for rate limits and logs); anyone
    /// else's header is ignored.
    pub trusted_proxies: Vec<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1".into(),
            port: 18789,
            token: None,
            auth: GatewayAuth::Token,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_connections: 4096,
            shutdown_grace_secs: 20,
            id: None,
            trusted_proxies: Vec::new(),
        }
    }
}

/// How gateway clients authenticate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum GatewayAuth {
    /// A shared token is required.
    #[default]
    Token,
    /// No token (allowed on loopback binds only).
    None,
}

/// `[permissions]` grants.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Permissions {
    /// Access the `cal` command has to calendars.
    pub calendar: CalendarPermission,
}

/// `permissions.calendar`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum CalendarPermission {
    /// No access (default): `cal` answers `PermissionDenied`.
    #[default]
    None,
    /// List calendars and events.
    Read,
    /// Read and change events.
    ReadWrite,
}

/// `[calendar]` settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct CalendarConfig {
    /// `local` (default) or `caldav`.
    pub backend: Option<String>,
    /// CalDAV server URL (credentials live in `skills/calendar-cli/secrets/.env`).
    pub url: Option<String>,
}

/// `[tools]` global policy layer.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ToolsConfig {
    /// `minimal`, `coding`, `messaging` or `full`.
    pub profile: Option<String>,
    /// Tool names or patterns allowed.
    pub allow: Vec<String>,
    /// Tool names or patterns denied (deny wins).
    pub deny: Vec<String>,
    /// `[tools.by_provider.<provider or provider/model>]`: narrower layers per provider.
    pub by_provider: BTreeMap<String, ToolLayerConfig>,
    /// `[tools.group]`: the layer for group and channel sessions.
    pub group: ToolLayerConfig,
    /// Sandbox mode: `off` (default), `non-main` or `all`.
    pub sandbox: SandboxMode,
    /// `[tools.web_fetch]`.
    pub web_fetch: WebFetchConfig,
    /// `[tools.web]`: `[tools.web.search]`.
    pub web: WebConfig,
    /// `[tools.media]`.
    pub media: MediaToolsConfig,
}

/// A `config.toml` that cannot be read or does not match the expected types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {}{message}", file.display(), key.as_ref().map(|k| format!("key '{k}': ")).unwrap_or_default())]
pub struct ConfigError {
    /// The file concerned.
    pub file: PathBuf,
    /// 1-based line (0 when the file could not be read at all).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Dotted key the error is about, when one can be named.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Config {
    /// Loads `path`; a missing file gives the defaults.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, line and key of the first problem.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(ConfigError {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                key: None,
                message: format!("cannot read: {e}"),
            }),
        }
    }

    /// Parses `text` as the content of `file` (used in messages).
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, line and key of the first problem.
    pub fn parse(file: &Path, text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            let (line, column) = line_col(text, offset);
            ConfigError {
                file: file.to_path_buf(),
                line,
                column,
                key: key_at(text, offset),
                message: plain_types(key_at(text, offset).as_deref(), e.message()),
            }
        })
    }
}

/// A deserializer message with Rust type names replaced by what a person would write
/// (`expected u16` → `expected a port number 1–65535` for a port).
fn plain_types(key: Option<&str>, message: &str) -> String {
    let port = key.is_some_and(|k| k.ends_with("port"));
    let wanted = |rust: &str| -> Option<&'static str> {
        Some(match rust {
            "u16" if port => "a port number 1–65535 (0 picks a free one)",
            "u8" => "a whole number from 0 to 255",
            "u16" => "a whole number from 0 to 65535",
            "u32" | "u64" | "usize" => "a whole number, 0 or more",
            "i32" | "i64" | "isize" => "a whole number",
            "f32" | "f64" => "a number",
            _ => return None,
        })
    };
    let mut out = message.to_string();
    for rust in [
        "u8", "u16", "u32", "u64", "usize", "i32", "i64", "isize", "f32", "f64",
    ] {
        let needle = format!("expected {rust}");
        if let (Some(at), Some(plain)) = (out.find(&needle), wanted(rust)) {
            let end = at + needle.len();
            let whole_word = !out[end..].starts_with(|c: char| c.is_ascii_alphanumeric());
            if whole_word {
                out.replace_range(at..end, &format!("expected {plain}"));
            }
        }
    }
    out
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The dotted key whose value covers `offset`: from the parsed document when the syntax is
/// valid, else from the text of the line (`[table]` headers above plus `key =`).
fn key_at(text: &str, offset: usize) -> Option<String> {
    if let Ok(doc) = toml_edit::Document::parse(text.to_string()) {
        let mut path = Vec::new();
        if find_key(doc.as_table(), offset, &mut path) {
            return Some(path.join("."));
        }
    }
    key_from_lines(text, offset)
}

fn find_key(table: &toml_edit::Table, offset: usize, path: &mut Vec<String>) -> bool {
    for (key, item) in table.iter() {
        path.push(key.to_string());
        let hit = match item {
            toml_edit::Item::Table(t) => find_key(t, offset, path),
            toml_edit::Item::Value(v) => v
                .span()
                .is_some_and(|s| s.contains(&offset) || s.start == offset),
            toml_edit::Item::ArrayOfTables(a) => a.iter().any(|t| find_key(t, offset, path)),
            toml_edit::Item::None => false,
        };
        if hit {
            return true;
        }
        path.pop();
    }
    false
}

fn key_from_lines(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let mut table = None;
    for l in text[..line_start].lines().rev() {
        let l = l.trim();
        if l.starts_with('[') {
            table = Some(l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
            break;
        }
    }
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty())?;
    Some(match table {
        Some(t) if !line.trim_start().starts_with('[') => format!("{t}.{key}"),
        _ => key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ConfigError {
        match Config::parse(Path::new("/h/config.toml"), text) {
            Err(e) => e,
            Ok(c) => panic!("expected an error, got {c:?}"),
        }
    }

    #[test]
    fn defaults_and_values() -> Result<(), ConfigError> {
        let c = Config::parse(
            Path::new("c"),
            "[permissions]\ncalendar = \"read-write\"\n[unknown]\nx=1\n",
        )?;
        assert_eq!(c.permissions.calendar, CalendarPermission::ReadWrite);
        assert_eq!(c.gateway.port, 18789);
        assert_eq!(c.gateway.bind, "127.0.0.1");
        Ok(())
    }

    #[test]
    fn type_errors_speak_of_numbers_not_rust_types() {
        let e = err("[gateway]\nport = \"abc\"\n");
        assert!(e.message.contains("expected a port number 1–65535"), "{e}");
        assert!(!e.to_string().contains("u16"), "{e}");
        let e = err("[agent]\ncontext_window = \"big\"\n");
        assert!(!e.to_string().contains("u64"), "{e}");
    }

    #[test]
    fn type_errors_name_file_line_and_key() {
        let e = err("# comment\n[gateway]\nport = \"high\"\n");
        assert_eq!((e.line, e.key.as_deref()), (3, Some("gateway.port")));
        assert!(
            e.to_string()
                .starts_with("/h/config.toml:3:8: key 'gateway.port': invalid type"),
            "{e}"
        );
        let e = err("[permissions]\ncalendar = \"write\"\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (2, Some("permissions.calendar"))
        );
        assert!(e.message.contains("read-write"), "{}", e.message);
    }

    #[test]
    fn syntax_errors_name_line_and_key() {
        let e = err("[gateway]\nbind = \"127.0.0.1\"\nport = \n");
        assert_eq!((e.line, e.key.as_deref()), (3, Some("gateway.port")));
        let e = err("[gateway\n");
        assert_eq!(e.line, 1);
    }
}
