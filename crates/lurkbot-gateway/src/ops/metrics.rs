//! `GET /metrics` (ARCHITECTURE.md §6.4): the process's metrics in Prometheus' text format —
//! the `lurkbot_*` families recorded where the work happens (`lurkbot_core::metrics`), and the
//! values read when scraped (WebSocket connections, the outbox's depth, the process's memory
//! and open files, the build). Served to the gateway token (a user's token is refused: the
//! figures are everyone's), or without a token on `[metrics] listen`, a loopback port of its
//! own. With the state in PostgreSQL (several gateways) every series carries `gateway_id`.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use lurkbot_core::metrics::{FAMILIES, Gauge, exposition};

use crate::access::http::{GatewayAuth, HttpError};
use crate::state::AppState;

/// The exposition's content type (Prometheus' text format 0.0.4).
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics` on the gateway's port: the gateway token's.
pub(crate) async fn metrics(GatewayAuth(state): GatewayAuth) -> Response {
    if state.user.is_some() {
        return HttpError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the metrics are the gateway's, every user's together: scrape /metrics with the gateway token",
        )
        .into_response();
    }
    respond(&state)
}

/// The router of `[metrics] listen`: `/metrics` without a token (the address is loopback).
pub fn open_router(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(state): State<AppState>| async move { respond(&state) }),
        )
        .with_state(state)
}

fn respond(state: &AppState) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text(state)).into_response()
}

/// The exposition as the gateway `state` has it now.
pub fn text(state: &AppState) -> String {
    let store = state.host.store();
    let gateway_id = store
        .filter(|s| s.backend() == "postgres")
        .map(|s| s.owner().to_string());
    let constant: Vec<(&str, &str)> = gateway_id
        .as_deref()
        .map(|id| vec![("gateway_id", id)])
        .unwrap_or_default();
    let mut gauges = vec![
        Gauge {
            name: "lurkbot_build_info",
            help: "The running build: its version.",
            series: vec![(vec![("version", env!("CARGO_PKG_VERSION"))], 1.0)],
        },
        Gauge {
            name: "lurkbot_websocket_connections",
            help: "Open WebSocket connections.",
            series: vec![(Vec::new(), state.connections() as f64)],
        },
    ];
    if let Some(Ok((pending, failed))) = store.map(lurkbot_state::Store::outbox_counts) {
        gauges.push(Gauge {
            name: "lurkbot_outbox_messages",
            help: "Messages in the outbox, by state (pending: still to send; failed: given up).",
            series: vec![
                (vec![("state", "pending")], pending as f64),
                (vec![("state", "failed")], failed as f64),
            ],
        });
    }
    let receives = state.host.channels.last_receives();
    if !receives.is_empty() {
        gauges.push(Gauge {
            name: "lurkbot_channel_last_receive_seconds",
            help: "When each channel last received a message or a sign of life, in Unix seconds (alert on time() minus it).",
            series: receives
                .iter()
                .map(|(name, at)| (vec![("channel", *name)], *at))
                .collect(),
        });
    }
    if let Some(rss) = resident_bytes() {
        gauges.push(Gauge {
            name: "lurkbot_process_resident_memory_bytes",
            help: "The process's resident memory (RSS).",
            series: vec![(Vec::new(), rss as f64)],
        });
    }
    if let Some(open) = open_files() {
        gauges.push(Gauge {
            name: "lurkbot_process_open_fds",
            help: "The process's open file descriptors (files, sockets, pipes).",
            series: vec![(Vec::new(), open as f64)],
        });
    }
    exposition(FAMILIES, &gauges, &constant)
}

/// The headline figures since this gateway started (`status` for the owner, `lurkbot status`,
/// the web UI's Usage panel): turns, model calls and their tokens and cost, tool calls,
/// channel messages, budget refusals, approvals, dropped spans, memory and open files.
pub(crate) fn headline() -> serde_json::Value {
    use lurkbot_core::metrics::{
        APPROVALS, BUDGET_REFUSALS, CHANNEL_MESSAGES, MODEL_CALLS, MODEL_COST, MODEL_TOKENS,
        SPANS_DROPPED, TOOL_CALLS, TURNS,
    };
    let whole = |n: f64| n as u64;
    let model_calls = MODEL_CALLS.total();
    let tool_calls = TOOL_CALLS.total();
    serde_json::json!({
        "turns": {
            "ok": whole(TURNS.sum_where("outcome", "ok")),
            "error": whole(TURNS.sum_where("outcome", "error")),
            "budget": whole(TURNS.sum_where("outcome", "budget")),
        },
        "modelCalls": {
            "total": whole(model_calls),
            "failed": whole(model_calls - MODEL_CALLS.sum_where("outcome", "ok")),
            "inputTokens": whole(MODEL_TOKENS.sum_where("direction", "input")),
            "outputTokens": whole(MODEL_TOKENS.sum_where("direction", "output")),
            "costUsd": MODEL_COST.total(),
        },
        "toolCalls": {
            "total": whole(tool_calls),
            "failed": whole(tool_calls - TOOL_CALLS.sum_where("outcome", "ok")),
        },
        "channelMessages": {
            "in": whole(CHANNEL_MESSAGES.sum_where("direction", "in")),
            "out": whole(CHANNEL_MESSAGES.sum_where("direction", "out")),
            "retried": whole(CHANNEL_MESSAGES.sum_where("direction", "retried")),
            "failed": whole(CHANNEL_MESSAGES.sum_where("direction", "failed")),
        },
        "budgetRefusals": whole(BUDGET_REFUSALS.total()),
        "approvals": whole(APPROVALS.total()),
        "spansDropped": whole(SPANS_DROPPED.total()),
        "rssBytes": resident_bytes(),
        "openFiles": open_files(),
    })
}

/// The process's resident memory, from `/proc/self/status` (Linux).
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// How many files the process has open, from `/proc/self/fd` (Linux).
fn open_files() -> Option<usize> {
    // The listing's own descriptor is one of them.
    Some(
        std::fs::read_dir("/proc/self/fd")
            .ok()?
            .count()
            .saturating_sub(1),
    )
}
