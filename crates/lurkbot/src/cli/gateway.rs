//! `lurkbot gateway [--bind ADDR] [--port N]`: the gateway, web UI and session host on one
//! port. Prints one line with the URL and logs to stderr and `logs/gateway.log`; reloads
//! config.toml on SIGHUP; stops cleanly on SIGINT/SIGTERM: running turns get
//! `[gateway] shutdown_grace_secs` (20) to finish while new work is answered 503, then what
//! still runs is left to the next start (ARCHITECTURE.md §6.3), and clients get a `shutdown`
//! event. `LURKBOT_GATEWAY_ID` (or `[gateway] id`) names it: each of several gateways on one
//! home needs its own.
//!
//! The token is `LURKBOT_GATEWAY_TOKEN` (environment or the home's `.env`), else
//! `gateway.token`; `gateway.auth = "none"` runs without one on loopback only. Hooks use
//! `LURKBOT_HOOKS_TOKEN`. The URL line carries the token only as a `#token=` fragment and only
//! when stdout is a terminal, so logs never hold it.

use crate::error::{CliError, CliResult};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::Path;

use clap::Args;
use lurkbot_core::{Config, GatewayAuth, Home, RunningGateway, layout};
use lurkbot_gateway::AppState;

/// Flags of `lurkbot gateway`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 stopped cleanly, 1 the port could not be served, 2 unsafe or missing settings.\n\nSignals: SIGHUP reloads config.toml; SIGINT and SIGTERM stop it cleanly, giving running turns [gateway] shutdown_grace_secs (20) to finish.\n\nExamples:\n  lurkbot gateway\n  lurkbot gateway --port 8080\n  lurkbot gateway install      # as a systemd user service\n  lurkbot gateway status"
)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct GatewayArgs {
    /// Run the gateway as a systemd user service instead.
    #[command(subcommand)]
    service: Option<super::service::ServiceArgs>,
    /// Address to bind (default gateway.bind, 127.0.0.1).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// Port (default gateway.port, 18789; 0 picks a free one).
    #[arg(long, value_name = "N")]
    port: Option<u16>,
}

pub(crate) fn run(home_path: &Path, args: &GatewayArgs) -> CliResult {
    if let Some(service) = &args.service {
        return super::service::run(home_path, service);
    }
    let home = Home::open(home_path)?;
    let mut config = Config::load(&home.join(layout::CONFIG))?;
    let vars = lurkbot_agent::setup::variables(&home);
    // Several gateways sharing one config.toml each name themselves here.
    if let Some(id) = vars("LURKBOT_GATEWAY_ID").filter(|v| !v.trim().is_empty()) {
        if !lurkbot_core::valid_gateway_id(id.trim()) {
            return Err(CliError::usage(
                "gateway",
                format!(
                    "LURKBOT_GATEWAY_ID '{id}' cannot name this gateway: use letters, digits, '-', '_' and '.'"
                ),
            ));
        }
        config.gateway.id = Some(id.trim().to_string());
    }
    // Gateways sharing a home over PostgreSQL keep their memory index and browser profile
    // apart: named after the gateway's id, else this machine (ARCHITECTURE.md §6.3).
    if matches!(
        lurkbot_agent::setup::state_location(&home, &config),
        Ok(lurkbot_state::Location::Postgres(_))
    ) && let Some(own) = config
        .gateway
        .id
        .clone()
        .or_else(lurkbot_core::instance::host_name)
    {
        lurkbot_core::instance::set_instance(&own);
    }
    let mut token_source = "gateway.token in config.toml";
    let token = match config.gateway.auth {
        GatewayAuth::None => None,
        GatewayAuth::Token => {
            let from_vars = vars("LURKBOT_GATEWAY_TOKEN").filter(|t| !t.trim().is_empty());
            if from_vars.is_some() {
                token_source = if std::env::var_os("LURKBOT_GATEWAY_TOKEN").is_some() {
                    "LURKBOT_GATEWAY_TOKEN from the environment"
                } else {
                    "LURKBOT_GATEWAY_TOKEN in the home's .env"
                };
            }
            let token = from_vars
                .or_else(|| config.gateway.token.clone())
                .filter(|t| !t.trim().is_empty());
            if token.is_none() {
                return Err(CliError::usage(
                    "gateway",
                    "no token: run `lurkbot init` (it writes gateway.token) or set LURKBOT_GATEWAY_TOKEN; gateway.auth = \"none\" runs without one on loopback only",
                ));
            }
            token
        }
    };
    let hooks_token = vars("LURKBOT_HOOKS_TOKEN").filter(|t| !t.trim().is_empty());
    let bind = args
        .bind
        .clone()
        .unwrap_or_else(|| config.gateway.bind.clone());
    let port = args.port.unwrap_or(config.gateway.port);
    let addr: SocketAddr = match format!("{bind}:{port}")
        .parse()
        .or_else(|_| format!("[{bind}]:{port}").parse::<SocketAddr>())
    {
        Ok(a) => a,
        Err(_) => {
            return Err(CliError::usage(
                "gateway",
                format!("'{bind}' is not an IP address to bind"),
            ));
        }
    };
    let log_level = crate::logging::start_gateway_logging(&home, &config)?;
    let state = AppState::new(home, config, token.clone(), hooks_token)
        .with_reload_hook(crate::logging::reload_hook(log_level));
    if let Err(e) = lurkbot_gateway::check_safe(&state, addr) {
        return Err(CliError::usage("gateway", e.to_string()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = match listen(addr) {
            Ok(l) => l,
            Err(e) => {
                return Err(CliError::failed(
                    "gateway",
                    format!("cannot listen on {addr}: {e}"),
                ));
            }
        };
        let local = listener.local_addr()?;
        // Installed before the address is printed: from then on SIGHUP reloads and SIGINT or
        // SIGTERM stop cleanly, never kill (whoever read that line may send one at once).
        reload_on_hangup(state.clone())?;
        let stop = stop_signal()?;
        // Recorded before the address is printed: whoever read that line can find it.
        if let Err(e) = RunningGateway::record(&state.home, local) {
            tracing::warn!(error = %e, "cannot record the gateway's address; `lurkbot config set` will not reload it");
        }
        let url = format!("http://{local}/");
        let line = match &token {
            Some(t) if std::io::stdout().is_terminal() => {
                format!("lurkbot gateway listening on {url} (web UI: {url}#token={t})")
            }
            Some(_) => {
                format!("lurkbot gateway listening on {url} (token: {token_source})")
            }
            None => format!("lurkbot gateway listening on {url} (no token: loopback only)"),
        };
        crate::run::print_stdout(&format!("{line}\n"))?;
        tracing::info!(address = %local, "gateway listening");
        let home = state.home.clone();
        // Stale temporary files (over an hour old, so none of this run's) are swept beside
        // serving, not before it: a home with years of transcripts must not delay `/health`.
        let sweep_home = home.clone();
        std::thread::spawn(move || lurkbot_core::sweep_stale_temp(&sweep_home));
        let served = lurkbot_gateway::serve(listener, state, stop).await;
        RunningGateway::clear(&home);
        match served {
            Ok(()) => {
                tracing::info!("gateway stopped");
                Ok(())
            }
            Err(e) => Err(CliError::failed("gateway", e.to_string())),
        }
    })
}

/// Reloads config.toml on every SIGHUP (a bad file is logged and the settings in force kept).
fn reload_on_hangup(state: AppState) -> std::io::Result<()> {
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading config.toml");
            // Refusals are logged by reload itself.
            let _ = state.reload();
        }
    });
    Ok(())
}

/// A listener with a deep accept queue (many clients may connect at once).
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}

/// Resolves on SIGINT or SIGTERM; both are caught from when this returns.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}
