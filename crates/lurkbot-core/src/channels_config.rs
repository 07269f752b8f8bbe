//! `[channels.<name>]`, `[[bindings]]` and `[session]`: which messaging platforms the gateway
//! connects to, who may talk to the agent there, which agent answers, and how direct messages
//! map to sessions (ARCHITECTURE.md §6.1). Credentials are never here: they come from the
//! home's `.env` (`TELEGRAM_BOT_TOKEN`, …).

use serde::{Deserialize, Serialize};

/// The platforms a `[channels.<name>]` table may name.
pub const CHANNEL_NAMES: &[&str] = &[
    "telegram", "discord", "slack", "matrix", "email", "irc", "whatsapp", "signal",
];

/// Where signal-cli's HTTP daemon answers by default (`daemon --http` with no address).
pub const SIGNAL_DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// The `[channels.whatsapp] mode` values.
pub const WHATSAPP_MODES: &[&str] = &["linked", "cloud"];

/// The `dm_policy` values.
pub const DM_POLICIES: &[&str] = &["pairing", "allowlist", "open", "disabled"];

/// `[channels.<name>]`: one platform.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ChannelConfig {
    /// Whether the gateway connects (default true once the table exists).
    pub enabled: bool,
    /// The platform's API (default its public one; a test server or a self-hosted one).
    pub base_url: Option<String>,
    /// Who may write directly: `pairing` (default: a stranger gets a one-time code and nothing
    /// else until `lurkbot pairing approve`), `allowlist` (only `allow_from`), `open` (anyone),
    /// `disabled` (no direct messages).
    pub dm_policy: String,
    /// The owner's own accounts, by platform identity: user ids (Telegram's numeric id, a
    /// Discord or Slack user id, a full Matrix id, an e-mail address); a Telegram `@username`
    /// is resolved to its id once. Never display names.
    pub allow_from: Vec<String>,
    /// Whether a group message must mention the bot to be answered (default true).
    pub require_mention: bool,
    /// Longest inbound message handed to the agent, in characters (default 4,000).
    pub max_inbound_chars: usize,
    /// Whether attachments are downloaded into `workspace/inbox/<channel>/` (default false:
    /// they are only named). Downloads go through `[network]`'s policy and `max_media_bytes`.
    pub fetch_media: bool,
    /// The largest attachment downloaded, in bytes (default 10,000,000).
    pub max_media_bytes: u64,
    /// Email only: the authserv-id of your own mail server (`mx.example.org`), whose topmost
    /// `Authentication-Results` header is believed. A mail counts as from its `From:` address
    /// only when that header says `dmarc=pass`, `dkim=pass` for the From domain, or
    /// `auth=pass` by the From address itself (SMTP AUTH); any other mail is unauthenticated
    /// and not answered. Unset: no mail is authenticated.
    pub trusted_authserv_id: Option<String>,
    /// WhatsApp only: `linked` (default: LurkBot as a linked device of a number, as WhatsApp
    /// Web is) or `cloud` (Meta's WhatsApp Business Cloud API, its webhook at
    /// `/channels/whatsapp/webhook`).
    pub mode: Option<String>,
    /// WhatsApp `cloud` only: the business phone number's id in Meta's Graph API (replies go
    /// to `<base_url>/<phone_number_id>/messages`).
    pub phone_number_id: Option<String>,
    /// How long the channel may stay `stale` — its own liveness check failing (a dead stream,
    /// an unanswered ping) while it reconnects — before the owner is told on another channel
    /// or in the web UI (default `5m`; they are told again when it is back).
    pub stale_alert_after: String,
    /// Signal only: the account signal-cli serves, its number with the country code
    /// (`+15550001111`).
    pub account: Option<String>,
    /// Signal only: signal-cli's program (`signal-cli`, or a path) for LurkBot to start as
    /// `signal-cli -a ACCOUNT daemon --http 127.0.0.1:PORT` and supervise; unset, LurkBot uses
    /// the daemon at `base_url` (default `http://127.0.0.1:8080`) that you run.
    pub cli: Option<String>,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            base_url: None,
            dm_policy: "pairing".into(),
            allow_from: Vec::new(),
            require_mention: true,
            max_inbound_chars: 4000,
            fetch_media: false,
            max_media_bytes: 10_000_000,
            trusted_authserv_id: None,
            mode: None,
            phone_number_id: None,
            stale_alert_after: "5m".into(),
            account: None,
            cli: None,
        }
    }
}

/// `[[bindings]]`: which agent answers a channel's messages (OpenClaw's bindings). The first
/// rule whose every given field matches wins; no match means `main`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Binding {
    /// The agent that answers.
    pub agent: String,
    /// The channel (`telegram`).
    pub channel: Option<String>,
    /// A sender (direct messages).
    pub peer: Option<String>,
    /// A group or room.
    pub group: Option<String>,
}

/// `[session]`: how channel conversations map to sessions.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct SessionConfig {
    /// `per-peer` (default: each sender's direct messages are their own session,
    /// `agent:<id>:dm:<channel>:<peer>`) or `main` (the owner's direct messages share
    /// `agent:<id>:main` with the web UI and the CLI).
    pub dm_scope: String,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            dm_scope: "per-peer".into(),
        }
    }
}

/// What is wrong with the channel settings, each with its key; `plugin_channels` are the
/// channels the installed plugins provide.
pub fn channel_problems(
    config: &crate::Config,
    plugin_channels: &[String],
) -> Vec<crate::ConfigProblem> {
    let mut found: Vec<(String, String)> = Vec::new();
    let mut problems = Problems(&mut found);
    for (name, channel) in &config.channels {
        if !CHANNEL_NAMES.contains(&name.as_str()) && !plugin_channels.contains(name) {
            problems.push(
                format!("channels.{name}"),
                format!(
                    "[channels.{name}]: not a channel LurkBot has (it has: {}) nor one an installed plugin provides",
                    CHANNEL_NAMES.join(", ")
                ),
            );
        }
        if let Some(mode) = &channel.mode {
            if name != "whatsapp" {
                problems.push(
                    format!("channels.{name}.mode"),
                    format!("channels.{name}.mode: only [channels.whatsapp] has a mode"),
                );
            } else if !WHATSAPP_MODES.contains(&mode.as_str()) {
                problems.push(
                    format!("channels.{name}.mode"),
                    format!(
                        "channels.{name}.mode = \"{mode}\": use one of {}",
                        WHATSAPP_MODES.join(", ")
                    ),
                );
            }
        }
        if name == "whatsapp"
            && channel.mode.as_deref() == Some("cloud")
            && channel.phone_number_id.as_deref().is_none_or(str::is_empty)
        {
            problems.push(
                format!("channels.{name}.phone_number_id"),
                "channels.whatsapp.phone_number_id: mode = \"cloud\" needs the business number's id (Meta's WhatsApp Manager, API Setup)".into(),
            );
        }
        if name == "signal" {
            signal_problems(channel, &mut problems);
        } else if channel.account.is_some() || channel.cli.is_some() {
            problems.push(
                format!("channels.{name}"),
                format!("channels.{name}: account and cli are [channels.signal]'s settings"),
            );
        }
        if crate::parse_period_ms(&channel.stale_alert_after).is_none() {
            problems.push(
                format!("channels.{name}.stale_alert_after"),
                format!(
                    "channels.{name}.stale_alert_after = \"{}\": a period such as 30s, 5m or 1h",
                    channel.stale_alert_after
                ),
            );
        }
        if !DM_POLICIES.contains(&channel.dm_policy.as_str()) {
            problems.push(
                format!("channels.{name}.dm_policy"),
                format!(
                    "channels.{name}.dm_policy = \"{}\": use one of {}",
                    channel.dm_policy,
                    DM_POLICIES.join(", ")
                ),
            );
        }
    }
    for (i, binding) in config.bindings.iter().enumerate() {
        if binding.agent.trim().is_empty() {
            problems.push("bindings".into(), format!("bindings[{i}]: agent is empty"));
        }
    }
    if !["per-peer", "main"].contains(&config.session.dm_scope.as_str()) {
        problems.push(
            "session.dm_scope".into(),
            format!(
                "session.dm_scope = \"{}\": use per-peer or main",
                config.session.dm_scope
            ),
        );
    }
    found
        .into_iter()
        .map(|(key, message)| crate::ConfigProblem { key, message })
        .collect()
}

/// `[channels.signal]`: its account is a number with the country code (or the account's ACI),
/// and its daemon is either LurkBot's (`cli`) or the owner's (`base_url`), not both.
fn signal_problems(channel: &ChannelConfig, problems: &mut Problems<'_>) {
    let account = channel.account.as_deref().unwrap_or_default();
    let number = account
        .strip_prefix('+')
        .is_some_and(|d| d.len() >= 6 && d.chars().all(|c| c.is_ascii_digit()));
    let aci = account.len() == 36 && account.chars().filter(|c| *c == '-').count() == 4;
    if !number && !aci {
        problems.push(
            "channels.signal.account".into(),
            format!(
                "channels.signal.account = \"{account}\": the account signal-cli serves, its number with the country code (\"+15550001111\")"
            ),
        );
    }
    if channel.cli.is_some() && channel.base_url.is_some() {
        problems.push(
            "channels.signal.cli".into(),
            "channels.signal: set cli (LurkBot starts signal-cli) or base_url (your own daemon), not both".into(),
        );
    }
}

struct Problems<'a>(&'a mut Vec<(String, String)>);

impl Problems<'_> {
    fn push(&mut self, key: String, message: String) {
        self.0.push((key, message));
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn problems(text: &str) -> Vec<String> {
        crate::Config::check(Path::new("config.toml"), text)
            .map(|(_, p)| p.into_iter().map(|p| p.key).collect())
            .unwrap_or_default()
    }

    #[test]
    fn signals_account_and_daemon_are_checked() {
        assert!(problems("[channels.signal]\naccount = \"+15550001111\"\n").is_empty());
        assert!(
            problems("[channels.signal]\naccount = \"+15550001111\"\ncli = \"signal-cli\"\n")
                .is_empty()
        );
        assert_eq!(problems("[channels.signal]\n"), ["channels.signal.account"]);
        assert_eq!(
            problems("[channels.signal]\naccount = \"15550001111\"\n"),
            ["channels.signal.account"]
        );
        assert_eq!(
            problems(
                "[channels.signal]\naccount = \"+15550001111\"\ncli = \"signal-cli\"\nbase_url = \"http://127.0.0.1:8080\"\n"
            ),
            ["channels.signal.cli"]
        );
        assert_eq!(
            problems("[channels.telegram]\naccount = \"+15550001111\"\n"),
            ["channels.telegram"]
        );
    }

    #[test]
    fn whatsapps_mode_and_number_id_are_checked() {
        assert!(
            problems("[channels.whatsapp]\nmode = \"cloud\"\nphone_number_id = \"1\"\n").is_empty()
        );
        assert!(
            problems("[channels.whatsapp]\n").is_empty(),
            "linked is the default"
        );
        assert_eq!(
            problems("[channels.whatsapp]\nmode = \"web\"\n"),
            ["channels.whatsapp.mode"]
        );
        assert_eq!(
            problems("[channels.whatsapp]\nmode = \"cloud\"\n"),
            ["channels.whatsapp.phone_number_id"]
        );
        assert_eq!(
            problems("[channels.telegram]\nmode = \"cloud\"\n"),
            ["channels.telegram.mode"]
        );
    }
}
