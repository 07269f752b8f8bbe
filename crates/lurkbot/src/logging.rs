//! The gateway's logs: `tracing` events to stderr (readable, coloured on a terminal) and to
//! `logs/gateway.log` (one JSON object per line, rotated by size). The level comes from
//! `LURKBOT_LOG` (or `RUST_LOG`; environment or the home's `.env`), else `log.level`; a reload
//! re-applies `log.level` unless a variable set it. Events carry names, keys, counts and timings — never tokens, and message
//! text only at `debug`.

use std::io::IsTerminal;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use lurkbot_core::{Config, GATEWAY_LOG, Home, LogConfig, RotatingLog};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Registry, reload};

use crate::error::CliError;

/// Variables that set the level (environment or the home's `.env`), first found wins (over
/// `log.level`).
pub(crate) const LEVEL_VARIABLES: &[&str] = &["LURKBOT_LOG", "RUST_LOG"];

/// Re-applies `log.level` after a reload.
#[derive(Clone)]
pub(crate) struct LogLevel {
    handle: reload::Handle<Targets, Registry>,
    /// The level was set by a variable, which a reload does not override.
    pinned: bool,
}

impl LogLevel {
    /// Applies the new config's `log.level` (unless a variable pinned the level).
    pub(crate) fn apply(&self, config: &Config) {
        if self.pinned {
            return;
        }
        match parse_filter(&config.log.level) {
            Ok(targets) => {
                if self.handle.reload(targets).is_ok() {
                    tracing::info!(filter = config.log.level.as_str(), "log level set");
                }
            }
            Err(e) => tracing::warn!(error = %e, "log.level not applied"),
        }
    }
}

fn parse_filter(filter: &str) -> Result<Targets, String> {
    LogConfig::check_filter(filter)?;
    Targets::from_str(filter).map_err(|e| format!("'{filter}' is not a log filter: {e}"))
}

/// Starts logging for the gateway of `home`.
///
/// # Errors
/// A level variable that is not a valid filter (usage error naming it).
pub(crate) fn start_gateway_logging(home: &Home, config: &Config) -> Result<LogLevel, CliError> {
    let vars = lurkbot_agent::setup::variables(home);
    let from_variable = LEVEL_VARIABLES.iter().find_map(|name| {
        vars(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (*name, v))
    });
    let (filter, pinned) = match &from_variable {
        Some((name, value)) => (
            parse_filter(value).map_err(|e| CliError::usage("gateway", format!("{name}: {e}")))?,
            true,
        ),
        None => (
            parse_filter(&config.log.level)
                .map_err(|e| CliError::usage("gateway", format!("log.level: {e}")))?,
            false,
        ),
    };
    let (filter, handle) = reload::Layer::new(filter);
    // Never blocks serving: a stuck terminal or pipe costs log lines (counted), not answers.
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(crate::lossy_stderr::LossyStderr::start())
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .with_target(false);
    let path = home.join(GATEWAY_LOG);
    let file = match RotatingLog::open(&path, config.log.max_file_bytes, config.log.keep_files) {
        Ok(log) => Some(
            tracing_subscriber::fmt::layer()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .with_writer(Mutex::new(log)),
        ),
        Err(e) => {
            eprintln!("lurkbot gateway: not logging to a file: {e}");
            None
        }
    };
    // A second start in one process (tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(file)
        .try_init();
    Ok(LogLevel { handle, pinned })
}

/// The hook a gateway calls after a reload.
pub(crate) fn reload_hook(level: LogLevel) -> lurkbot_gateway::ReloadHook {
    Arc::new(move |config: &Config| level.apply(config))
}
