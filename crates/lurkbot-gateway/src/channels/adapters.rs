//! The platforms' adapters, made from their settings and the home's `.env`: the one place that
//! knows every built-in channel by name; all of them then run the same loop (`lease.rs`,
//! `receive.rs`, `handle.rs`).

use std::sync::Arc;

use lurkbot_channels::Channel;
use lurkbot_channels::pairing::PairingStore;
use lurkbot_core::layout;

use crate::channels::context::ChannelContext;

/// Makes the channel `name` from its settings and the home's variables.
pub(crate) fn build(state: &ChannelContext, name: &str) -> Result<Arc<dyn Channel>, String> {
    let config = state.config();
    let settings = config.channels.get(name).cloned().unwrap_or_default();
    let vars = lurkbot_agent::setup::variables(&state.home);
    // What a channel needs from `.env` is said in one place, which `lurkbot doctor` reads too.
    if let Some(lacking) =
        lurkbot_channels::credentials::missing_variables(name, settings.mode.as_deref(), |v| {
            vars(v).is_some()
        })
    {
        return Err(lacking);
    }
    match name {
        "telegram" => {
            let token = vars("TELEGRAM_BOT_TOKEN")
                .ok_or("TELEGRAM_BOT_TOKEN is not set (put it in the home's .env)")?;
            let dir = state.home.join(layout::CHANNELS).join("telegram");
            lurkbot_channels::telegram::Telegram::new(settings.base_url.as_deref(), &token, dir)
                .map(|t| Arc::new(t) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        "discord" => {
            let token = vars("DISCORD_BOT_TOKEN")
                .ok_or("DISCORD_BOT_TOKEN is not set (put it in the home's .env)")?;
            let dir = state.home.join(layout::CHANNELS).join("discord");
            lurkbot_channels::discord::Discord::new(settings.base_url.as_deref(), &token)
                .map(|d| Arc::new(d.resuming_from(dir)) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        "slack" => {
            let bot = vars("SLACK_BOT_TOKEN")
                .ok_or("SLACK_BOT_TOKEN is not set (put it in the home's .env)")?;
            let app = vars("SLACK_APP_TOKEN").ok_or("SLACK_APP_TOKEN is not set (an app-level xapp- token with connections:write, in the home's .env)")?;
            lurkbot_channels::slack::Slack::new(settings.base_url.as_deref(), &bot, &app)
                .map(|s| Arc::new(s) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        "email" => {
            let need = |name: &str| {
                vars(name).ok_or_else(|| format!("{name} is not set (put it in the home's .env)"))
            };
            let settings = lurkbot_channels::email::EmailSettings {
                imap_url: need("EMAIL_IMAP_URL")?,
                smtp_url: need("EMAIL_SMTP_URL")?,
                user: need("EMAIL_USER")?,
                password: need("EMAIL_PASSWORD")?,
                from: need("EMAIL_FROM")?,
                trusted_authserv_id: settings.trusted_authserv_id.clone(),
            };
            let dir = state.home.join(layout::CHANNELS).join("email");
            Ok(Arc::new(lurkbot_channels::email::Email::new(settings, dir)) as Arc<dyn Channel>)
        }
        "irc" => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            state.host.channels.set_irc_line(tx);
            Ok(
                Arc::new(lurkbot_channels::irc::IrcLine::new(state.host.irc(), rx))
                    as Arc<dyn Channel>,
            )
        }
        "matrix" => {
            use lurkbot_channels::matrix::{Credentials, Matrix};
            let homeserver = settings
                .base_url
                .clone()
                .or_else(|| vars("MATRIX_HOMESERVER"))
                .ok_or("MATRIX_HOMESERVER is not set (put it in the home's .env, or base_url)")?;
            let credentials = match (vars("MATRIX_ACCESS_TOKEN"), vars("MATRIX_USER"), vars("MATRIX_PASSWORD")) {
                (Some(token), _, _) => Credentials::Token(token),
                (None, Some(user), Some(password)) => Credentials::Password { user, password },
                _ => return Err("set MATRIX_ACCESS_TOKEN, or MATRIX_USER and MATRIX_PASSWORD, in the home's .env".into()),
            };
            // Invitations: from whoever may talk to the bot, and direct ones under pairing or
            // open (a stranger must be able to receive their code).
            let invites_state = state.clone();
            let invites = Box::new(move |inviter: &str, direct: bool| {
                let config = invites_state.config();
                let Some(c) = config.channels.get("matrix") else {
                    return false;
                };
                c.allow_from.iter().any(|a| a == inviter)
                    || PairingStore::open(&invites_state.home)
                        .is_approved("matrix", inviter)
                        .unwrap_or(false)
                    || (direct && matches!(c.dm_policy.as_str(), "pairing" | "open"))
            });
            let dir = state.home.join(layout::CHANNELS).join("matrix");
            Matrix::new(&homeserver, credentials, dir, invites)
                .map(|m| Arc::new(m) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        "whatsapp" => match settings.mode.as_deref().unwrap_or("linked") {
            "cloud" => {
                let need =
                    |v: &str| vars(v).ok_or(format!("{v} is not set (put it in the home's .env)"));
                let phone = settings
                    .phone_number_id
                    .clone()
                    .ok_or("channels.whatsapp.phone_number_id is not set")?;
                let secrets = lurkbot_channels::whatsapp::CloudSecrets {
                    access_token: need("WHATSAPP_ACCESS_TOKEN")?,
                    app_secret: need("WHATSAPP_APP_SECRET")?,
                    verify_token: need("WHATSAPP_VERIFY_TOKEN")?,
                };
                let cloud = lurkbot_channels::whatsapp::WhatsAppCloud::new(
                    settings.base_url.as_deref(),
                    &phone,
                    secrets,
                )
                .map_err(|e| e.to_string())?;
                // Meta's requests reach it through the one unguarded route, while it runs.
                state.host.channels.set_whatsapp_webhook(cloud.webhook());
                Ok(Arc::new(cloud) as Arc<dyn Channel>)
            }
            _ => {
                // The device's keys live in the state store, so the gateway that takes the
                // channel's lease over connects as the same device.
                let store = state
                    .host
                    .store()
                    .cloned()
                    .ok_or("WhatsApp's linked device needs the state store")?;
                let keys = lurkbot_channels::whatsapp_linked::keys::StoredKeys::new(store);
                let linked = lurkbot_channels::whatsapp_linked::WhatsAppLinked::new(keys, None)
                    .with_endpoint(settings.base_url.as_deref())
                    // Media URLs can come from the sender: the gate's rules for such URLs.
                    .with_network(lurkbot_agent::gate::web_rules(
                        lurkbot_agent::gate::UrlFrom::Elsewhere,
                        &config,
                    ));
                Ok(Arc::new(linked) as Arc<dyn Channel>)
            }
        },
        "signal" => {
            use lurkbot_channels::signal::Signal;
            let account = settings
                .account
                .clone()
                .ok_or("channels.signal.account is not set (the number signal-cli serves)")?;
            let signal = match &settings.cli {
                // LurkBot runs signal-cli itself, on the gateway that holds the channel.
                Some(cli) => {
                    let dir = state.home.join(layout::CHANNELS).join("signal");
                    lurkbot_channels::signal_daemon::SignalDaemon::new(cli, &account, &dir)
                        .and_then(Signal::supervised)
                }
                None => Signal::new(
                    settings
                        .base_url
                        .as_deref()
                        .unwrap_or(lurkbot_core::SIGNAL_DEFAULT_URL),
                    &account,
                ),
            };
            signal
                .map(|s| Arc::new(s) as Arc<dyn Channel>)
                .map_err(|e| e.to_string())
        }
        // A channel an enabled plugin provides (`plugins/`).
        other => match state.host.plugins().channel(other) {
            Some(channel) => Ok(channel as Arc<dyn Channel>),
            None => Err(format!(
                "LurkBot has no '{other}' channel, and no enabled plugin provides one"
            )),
        },
    }
}
