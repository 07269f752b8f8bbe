//! `lurkbot doctor` on `[channels.signal]`: signal-cli is there and new enough — the Signal
//! service stops serving releases older than about three months, and a channel on one fails
//! in ways that do not say so.

use lurkbot_channels::signal_daemon::{MIN_VERSION, daemon_version, new_enough, version_of};
use lurkbot_core::Config;

use super::doctor_check::{Check, Status, bad, ok};

/// The check, when a Signal channel is enabled.
pub(super) fn signal(config: &Config) -> Option<Check> {
    let settings = config.channels.get("signal").filter(|s| s.enabled)?;
    let minimum = MIN_VERSION.map(|n| n.to_string()).join(".");
    let found = match &settings.cli {
        Some(cli) => version_of(cli).map_err(|e| {
            (
                e,
                format!("install signal-cli {minimum} or newer (its GitHub releases), or set [channels.signal] cli to its path"),
            )
        }),
        None => {
            let url = settings
                .base_url
                .as_deref()
                .unwrap_or(lurkbot_core::SIGNAL_DEFAULT_URL);
            let asked = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(daemon_version(url)));
            asked.map_err(|e| {
                (
                    e,
                    format!("start it: signal-cli -a ACCOUNT daemon --http {}", url.trim_start_matches("http://")),
                )
            })
        }
    };
    Some(match found {
        Ok(version) if new_enough(&version) => ok("signal", format!("signal-cli {version}")),
        Ok(version) => bad(
            "signal",
            Status::Fail,
            format!(
                "signal-cli {version} is older than {minimum}: the Signal service refuses old releases"
            ),
            format!("update signal-cli to {minimum} or newer"),
        ),
        Err((why, fix)) => bad("signal", Status::Fail, why, fix),
    })
}
