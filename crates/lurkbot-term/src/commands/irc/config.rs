//! The IRC settings, read only from `skills/irc-cli/secrets/.env` (never from the command line):
//! server, port, TLS, the default channel, the nick (at most 9 characters), and the optional
//! server password, channel key and NickServ password. Missing values are named, never shown.

use lurkbot_core::{Home, Secrets};

use crate::{CommandError, ErrorCode};

/// The skill whose `secrets/.env` holds the settings.
pub(crate) const SKILL: &str = "irc-cli";
/// Where the settings live, for messages.
pub(crate) const CREDENTIALS_FILE: &str = "skills/irc-cli/secrets/.env";
/// The silence after which a command session's server is pinged (and dropped after another).
pub(super) const PING_AFTER: std::time::Duration = std::time::Duration::from_secs(180);
/// Longest nick accepted (RFC 1459's limit, which many networks still keep).
pub(crate) const MAX_NICK: usize = 9;

/// One session's connection settings. `Debug` never shows a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct IrcConfig {
    /// Server host name or address.
    pub server: String,
    /// TCP port.
    pub port: u16,
    /// Whether TLS is spoken.
    pub tls: bool,
    /// The default channel (auto-joined; `send` needs no `--confirm` for it).
    pub channel: String,
    /// The nick asked for.
    pub nick: String,
    pub(crate) server_password: Option<String>,
    pub(crate) channel_key: Option<String>,
    pub(crate) nickserv_password: Option<String>,
    /// Deliver inbound messages to the session's agent.
    pub auto_forward: bool,
    /// Silence after which the server is pinged, and after which a second silence drops the
    /// link (not a setting of the file: the gateway's chat line asks for a shorter one).
    pub ping_after: std::time::Duration,
}

impl std::fmt::Debug for IrcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IrcConfig")
            .field("server", &self.server)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("channel", &self.channel)
            .field("nick", &self.nick)
            .field("auto_forward", &self.auto_forward)
            .finish_non_exhaustive()
    }
}

impl IrcConfig {
    /// Reads the settings of `home`.
    ///
    /// # Errors
    /// `MissingCredentials` naming the missing keys, `NickTooLong`, or `ConfigInvalid` for a
    /// malformed value.
    pub fn load(home: &Home) -> Result<Self, CommandError> {
        let secrets = Secrets::load(home);
        let empty = Default::default();
        let vars = secrets.skill(SKILL).unwrap_or(&empty);
        let get = |key: &str| {
            vars.get(key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let missing: Vec<&str> = ["IRC_SERVER", "IRC_CHANNEL", "IRC_NICK"]
            .into_iter()
            .filter(|k| get(k).is_none())
            .collect();
        if !missing.is_empty() {
            let quoting = if missing.contains(&"IRC_CHANNEL") {
                "; a # after a blank starts a comment: write IRC_CHANNEL=#lurkbot"
            } else {
                ""
            };
            return Err(CommandError::new(
                ErrorCode::MissingCredentials,
                format!("{} not set in {CREDENTIALS_FILE}", missing.join(", ")),
            )
            .with_hint(format!(
                "fill in {CREDENTIALS_FILE} (see {CREDENTIALS_FILE}.example; mode 0600){quoting}"
            )));
        }
        let (server, channel, nick) = (
            get("IRC_SERVER").unwrap_or_default(),
            get("IRC_CHANNEL").unwrap_or_default(),
            get("IRC_NICK").unwrap_or_default(),
        );
        let channel = if channel.starts_with(['#', '&']) {
            channel
        } else {
            format!("#{channel}")
        };
        let invalid = |key: &str, what: &str| {
            CommandError::new(
                ErrorCode::ConfigInvalid,
                format!("{key} in {CREDENTIALS_FILE} {what}"),
            )
            .with_hint(format!("fix {key} in {CREDENTIALS_FILE}"))
        };
        if nick.chars().count() > MAX_NICK {
            return Err(CommandError::new(
                ErrorCode::NickTooLong,
                format!(
                    "IRC_NICK has {} characters; IRC nicks may have at most {MAX_NICK}",
                    nick.chars().count()
                ),
            )
            .with_hint(format!(
                "choose a nick of at most {MAX_NICK} characters in {CREDENTIALS_FILE}"
            )));
        }
        if !valid_nick(&nick) {
            return Err(invalid(
                "IRC_NICK",
                "must start with a letter or one of [\\]^_`{|} and hold only those, digits and -",
            ));
        }
        if !channel.starts_with(['#', '&']) || channel.contains([' ', ',', '\x07']) {
            return Err(invalid(
                "IRC_CHANNEL",
                "must be a channel name such as #lurkbot",
            ));
        }
        if server.contains(|c: char| c.is_whitespace() || c == '/') {
            return Err(invalid("IRC_SERVER", "must be a host name or address"));
        }
        let tls = match get("IRC_TLS").as_deref() {
            None | Some("1" | "true" | "yes" | "on") => true,
            Some("0" | "false" | "no" | "off") => false,
            Some(_) => return Err(invalid("IRC_TLS", "must be 1 or 0")),
        };
        let port = match get("IRC_PORT") {
            None => {
                if tls {
                    6697
                } else {
                    6667
                }
            }
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(invalid("IRC_PORT", "must be a port number 1–65535")),
            },
        };
        let auto_forward = matches!(
            get("IRC_AUTO_FORWARD_TO_AGENT").as_deref(),
            Some("1" | "true" | "yes" | "on")
        );
        Ok(Self {
            server,
            port,
            tls,
            channel,
            nick,
            server_password: get("IRC_SERVER_PASSWORD"),
            channel_key: get("IRC_CHANNEL_KEY"),
            nickserv_password: get("IRC_NICKSERV_PASSWORD"),
            auto_forward,
            ping_after: PING_AFTER,
        })
    }
}

/// RFC 2812 nick characters.
pub(crate) fn valid_nick(nick: &str) -> bool {
    let special = |c: char| "[]\\`_^{|}".contains(c);
    let mut chars = nick.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || special(c))
        && chars.all(|c| c.is_ascii_alphanumeric() || special(c) || c == '-')
}
