//! The router and the server loop: one port for `/ws`, the HTTP API, the hooks and the web UI.
//!
//! Refusals at start: a non-loopback bind without a token (or with one under 24 characters),
//! and `gateway.auth = "none"` on a non-loopback bind. Every route passes the Host/Origin guard
//! first; connection limits live in the accept loop (`transport/accept.rs`). Stopping (SIGINT/SIGTERM in
//! the CLI, or the `stop` future) first drains (`ops/shutdown.rs`: running turns get
//! `[gateway] shutdown_grace_secs` to finish, new work is answered 503), then tells every
//! WebSocket client (`shutdown` event), aborts what still runs and records it as cancelled in
//! its transcript, then returns.

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use axum::routing::{get, post};
use lurkbot_core::GatewayAuth;
use tokio::net::TcpListener;

use crate::state::AppState;

/// A reason the gateway will not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Unsafe settings.
    #[error("{0}")]
    Unsafe(String),
    /// The port could not be bound or served.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(crate::transport::ws::root))
        .route(
            "/health",
            get(|| async { axum::Json(crate::protocol::health()) }),
        )
        .route("/ready", get(crate::ops::ready::ready))
        .route("/metrics", get(crate::ops::metrics::metrics))
        .route("/ws", get(crate::transport::ws::upgrade))
        .route("/v1/models", get(crate::api::openai::models))
        .route("/v1/images/{name}", get(crate::api::images::serve))
        .route("/v1/audio/{name}", get(crate::api::images::serve_audio))
        .route(
            "/v1/chat/completions",
            post(crate::api::openai::chat_completions),
        )
        .route("/auth/login", post(crate::access::sign_in::login))
        .route("/auth/logout", post(crate::access::sign_in::logout))
        .route("/auth/me", get(crate::access::sign_in::me))
        .route(
            "/channels/whatsapp/webhook",
            get(crate::api::whatsapp::verify).post(crate::api::whatsapp::notify),
        )
        .route("/hooks/wake", post(crate::api::hooks::wake))
        .route("/hooks/agent", post(crate::api::hooks::agent))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::access::http::guard,
        ))
        .with_state(state)
}

/// Shortest token accepted on a non-loopback bind.
pub(crate) const MIN_REMOTE_TOKEN_CHARS: usize = 24;

/// Checks that `state`'s auth suits a listener on `addr`.
///
/// # Errors
/// `Unsafe` naming the setting to change.
pub fn check_safe(state: &AppState, addr: SocketAddr) -> Result<(), StartError> {
    let loopback = addr.ip().is_loopback();
    if !loopback && state.config().gateway.auth == GatewayAuth::None {
        return Err(StartError::Unsafe(format!(
            "gateway.auth = \"none\" is allowed on loopback only, not on {addr}; remove it or bind 127.0.0.1"
        )));
    }
    if !loopback && state.token.is_none() {
        return Err(StartError::Unsafe(format!(
            "binding {addr} without a token is refused: set gateway.token (lurkbot init makes one) or LURKBOT_GATEWAY_TOKEN"
        )));
    }
    if let Some(token) = state.token.as_deref()
        && !loopback
        && token.chars().count() < MIN_REMOTE_TOKEN_CHARS
    {
        return Err(StartError::Unsafe(format!(
            "binding {addr} with a token of {} characters is refused: off loopback the token needs at least {MIN_REMOTE_TOKEN_CHARS} (lurkbot init makes a 48-character one)",
            token.chars().count()
        )));
    }
    Ok(())
}

/// Serves on `listener` until `stop` resolves, then shuts down cleanly.
///
/// # Errors
/// `Unsafe` settings, or the server failing.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let local = listener.local_addr()?;
    check_safe(&state, local)?;
    let metrics = open_metrics(&state).await?;
    let Some(store) = state.host.store().cloned() else {
        let config = state.config();
        let reason =
            lurkbot_agent::setup::open_state(&state.home, &config, config.gateway.id.as_deref())
                .err()
                .map_or_else(|| "it failed once".to_string(), |e| e.to_string());
        let place = match lurkbot_agent::setup::state_location(&state.home, &config) {
            Ok(lurkbot_state::Location::Postgres(url)) => url.to_string(),
            _ => lurkbot_state::STATE_FILE.to_string(),
        };
        return Err(StartError::Unsafe(format!(
            "the state store ({place}) cannot be opened, and without it a crash would lose messages: {reason}"
        )));
    };
    state.set_bound(local);
    let exporter = {
        let config = state.config();
        crate::ops::otel::target(&state.home, &config).map(|target| {
            crate::ops::otel::start(
                target,
                config.otel.capture_content,
                Some(store.owner().to_string()),
            )
        })
    };
    // Turns cut by the last stop go on (ARCHITECTURE.md §6.3). Read before the timers and the
    // channels start: a turn they admit now is theirs, not one to resume.
    state.host.resume_unfinished();
    state.hub.share_on(&store);
    let forwarder = tokio::spawn(state.host.clone().forward_irc());
    let timers = crate::ops::scheduler::start(state.timers());
    let memory_watch = crate::ops::memory_watch::start(state.host.clone());
    // Plugins first: the channels they provide start with the others.
    let plugins =
        crate::plugins::PluginHost::start(&state.home, &state.config(), Some(store.clone()));
    state.host.set_plugins(plugins.clone());
    let channels = crate::channels::start(&state.channel_context());
    // Messages not sent go out.
    let outbox = crate::channels::outbox::start(
        state.host.channels.clone(),
        state.home.clone(),
        store.clone(),
    );
    // Leases renewed, and turns a gone gateway on this home left taken over.
    let leases = crate::turns::durable::keep_leases(state.host.clone());
    // Every user's own state, so their cron jobs and heartbeats run while they are away: made
    // beside serving, not before it (a connection that comes first makes its own at once).
    let users_watch = state.users.as_ref().map(|users| users.watch());
    if let Some(members) = state.members.clone() {
        members.serve_with(serve_member);
        let gateway = state.clone();
        tokio::spawn(async move { members.start_all(&gateway) });
    }
    // MCP servers start in the background: a turn offers the tools of those ready by then.
    let mcp = state.host.mcp.clone();
    let starting = tokio::spawn({
        let mcp = mcp.clone();
        async move { mcp.start().await }
    });
    let app = router(state.clone());
    let profile = lurkbot_agent::browser_profile(&state.home);
    crate::ops::gateway_control::attach(&state);
    let host = state.host.clone();
    let members = state.members.clone();
    let served = crate::transport::accept::accept_loop(listener, app, state, stop).await;
    crate::ops::gateway_control::detach(&host);
    forwarder.abort();
    if let Some(metrics) = &metrics {
        metrics.abort();
    }
    memory_watch.abort();
    channels.iter().for_each(tokio::task::JoinHandle::abort);
    host.channels.stop_all().await;
    plugins.stop_all().await;
    outbox.abort();
    leases.abort();
    if let Some(watch) = &users_watch {
        watch.abort();
    }
    starting.abort();
    mcp.shutdown().await;
    // This home's Chromium stops with us (a kill -9 stops it too: its DevTools pipe closes).
    lurkbot_browser::browser_for(&profile).stop().await;
    if let Some(members) = members {
        members.shutdown().await;
    }
    timers.abort();
    // The scheduler's lock is released before this returns (another gateway may take it).
    let _ = timers.await;
    // What this gateway leaves unended is free at once for the next start or another gateway
    // (its turns were stopped above).
    if let Err(e) = store.release_leases() {
        tracing::warn!(error = %e, "leases not given back: another gateway waits for them");
    }
    if let Some(exporter) = exporter {
        crate::ops::otel::stop(exporter).await;
    }
    served?;
    Ok(())
}

/// Starts what serves one user's own state once the gateway serves: their turns and messages
/// cut by the last stop go on, their timers, memory watch and outbox run.
fn serve_member(state: &AppState) -> Vec<tokio::task::JoinHandle<()>> {
    state.host.resume_unfinished();
    let mut tasks = vec![
        crate::ops::scheduler::start(state.timers()),
        crate::ops::memory_watch::start(state.host.clone()),
    ];
    if let Some(store) = state.host.store() {
        state.hub.share_on(store);
        tasks.push(crate::channels::outbox::start(
            state.host.channels.clone(),
            state.home.clone(),
            store.clone(),
        ));
        tasks.push(crate::turns::durable::keep_leases(state.host.clone()));
    }
    tasks
}

/// Serves `/metrics` without a token on `[metrics] listen` (a loopback address only).
///
/// # Errors
/// `Unsafe` for an address off loopback or not an address; `Io` when it cannot be bound.
async fn open_metrics(state: &AppState) -> Result<Option<tokio::task::JoinHandle<()>>, StartError> {
    let Some(listen) = state.config().metrics.listen.clone() else {
        return Ok(None);
    };
    let addr: SocketAddr = listen.trim().parse().map_err(|_| {
        StartError::Unsafe(format!(
            "metrics.listen '{listen}' is not an address: write 127.0.0.1:9464"
        ))
    })?;
    if !addr.ip().is_loopback() {
        return Err(StartError::Unsafe(format!(
            "metrics.listen {addr} is not a loopback address: /metrics there has no token; use 127.0.0.1 or [::1], or scrape the gateway's /metrics with its token"
        )));
    }
    let listener = TcpListener::bind(addr).await.map_err(|e| {
        StartError::Io(std::io::Error::new(
            e.kind(),
            format!("metrics.listen {addr} cannot be bound: {e}"),
        ))
    })?;
    tracing::info!(address = %addr, "metrics listening");
    let app = crate::ops::metrics::open_router(state.clone());
    let state = state.clone();
    Ok(Some(tokio::spawn(async move {
        while let Ok((stream, peer)) = listener.accept().await {
            let served = crate::transport::accept::serve_connection(
                stream,
                peer,
                app.clone(),
                state.stopping(),
            );
            tokio::spawn(served);
        }
    })))
}
