//! `/ws`: the WebSocket protocol. The server speaks first (`connect.challenge {nonce, ts}`); the
//! client's first request must be `connect` with a protocol range containing 1 and the token;
//! anything else, or a wrong token, gets an error response and the connection is closed. After
//! `hello-ok`, requests run concurrently (each answered by id), events arrive numbered by a
//! per-connection `seq`, and a `tick` is sent every 15 s. Frames over the payload cap are
//! refused with `INVALID_REQUEST` and the connection is closed.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use crate::auth::token_matches;
use crate::protocol::{
    self, Challenge, ErrorCode, Event, EventFrame, Grants, Lagged, MAX_PAYLOAD, MethodError,
    PROTOCOL_VERSION, ProtocolVersion, Shutdown, TICK_INTERVAL_MS, Tick,
};
use crate::state::AppState;

/// Time allowed for the `connect` request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest frame accepted before `connect` succeeded (an unauthenticated client sends little).
pub const PRE_CONNECT_MAX: usize = 64 * 1024;

/// What the writer task sends.
enum Out {
    /// A response frame.
    Frame(Value),
    /// An event (numbered when sent).
    Event(Event),
    /// From now on, shape frames for this version (sent once, after `hello-ok`).
    Speak(ProtocolVersion),
    /// Close with a code and reason.
    Close(u16, String),
}

/// The upgrade handler.
pub(crate) async fn upgrade(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    ws: WebSocketUpgrade,
) -> Response {
    // Host and Origin were checked by the router's guard (crate::http::guard).
    if let Some(wait) = state.limiter.blocked(addr.ip()) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many failed attempts; try again in {wait} s"),
        )
            .into_response();
    }
    // Small buffers: a thousand idle connections should cost little memory.
    ws.max_message_size(MAX_PAYLOAD * 2)
        .max_frame_size(MAX_PAYLOAD * 2)
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .on_upgrade(move |socket| connection(socket, state, addr.ip()))
}

async fn connection(socket: WebSocket, state: AppState, ip: IpAddr) {
    let _counted = state.connection_guard();
    let (sink, mut stream) = socket.split();
    let (out, rx) = mpsc::unbounded_channel::<Out>();
    let writer = tokio::spawn(write_loop(sink, rx));
    let nonce = lurkbot_core::random_hex(16);
    let _ = out.send(Out::Event(Event::ConnectChallenge(Challenge {
        nonce,
        ts: lurkbot_core::now_ms(),
    })));
    if let Some(grants) = handshake(&state, &mut stream, &out, ip).await {
        serve(&state, &grants, &mut stream, &out).await;
        tracing::info!(peer = %ip, "WebSocket client left");
    }
    drop(out);
    let _ = writer.await;
}

/// Reads and answers the `connect` request; the scopes granted, or `None` when the connection
/// must close.
async fn handshake(
    state: &AppState,
    stream: &mut futures_util::stream::SplitStream<WebSocket>,
    out: &mpsc::UnboundedSender<Out>,
    ip: IpAddr,
) -> Option<Grants> {
    let refuse = |id: Option<&str>, error: MethodError| {
        let _ = out.send(Out::Frame(protocol::err(id, &error)));
        let _ = out.send(Out::Close(close_code::POLICY, error.message));
        None
    };
    let text = match tokio::time::timeout(CONNECT_TIMEOUT, stream.next()).await {
        Ok(Some(Ok(Message::Text(text)))) => text,
        Ok(Some(Ok(_))) => {
            return refuse(
                None,
                MethodError::invalid("the first frame must be a connect request (JSON text)"),
            );
        }
        Ok(_) => return None,
        Err(_) => return refuse(None, MethodError::invalid("no connect request within 10 s")),
    };
    if text.len() > PRE_CONNECT_MAX {
        let error = MethodError::invalid(format!(
            "the connect request is larger than {PRE_CONNECT_MAX} bytes"
        ));
        let _ = out.send(Out::Frame(protocol::err(None, &error)));
        let _ = out.send(Out::Close(close_code::SIZE, error.message));
        return None;
    }
    let request = match protocol::parse_request(text.as_str()) {
        Ok(r) => r,
        Err((id, e)) => return refuse(id.as_deref(), e),
    };
    let id = request.id.as_str();
    if request.method != protocol::method::CONNECT {
        return refuse(
            Some(id),
            MethodError::invalid(format!(
                "the first request must be 'connect', not '{}'",
                request.method
            )),
        );
    }
    let p = &request.params;
    let number = |key: &str| p.get(key).and_then(Value::as_u64);
    let (min, max) = match (number("minProtocol"), number("maxProtocol")) {
        (None, None) => (PROTOCOL_VERSION, PROTOCOL_VERSION),
        (min, max) => (min.unwrap_or(0), max.unwrap_or(u64::MAX)),
    };
    let Some(version) = ProtocolVersion::negotiate(min, max) else {
        return refuse(
            Some(id),
            MethodError::invalid(format!(
                "protocol {min}..{max} not supported; this gateway speaks {}",
                ProtocolVersion::supported_list()
            )),
        );
    };
    if let Some(expected) = state.token.as_deref() {
        let given = p
            .pointer("/auth/token")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !token_matches(expected, given) {
            // Only a wrong token counts towards the limit; a missing one locks nobody out.
            if given.is_empty() {
                tracing::info!(peer = %ip, "auth failure: WebSocket connect without a token");
            } else {
                tracing::warn!(peer = %ip, "auth failure: WebSocket connect with a wrong token");
                state.limiter.fail(ip);
            }
            return refuse(
                Some(id),
                MethodError::new(
                    ErrorCode::Unauthorized,
                    "wrong or missing token (auth.token); it is gateway.token in config.toml or LURKBOT_GATEWAY_TOKEN",
                ),
            );
        }
    }
    let conn_id = format!("conn_{}", lurkbot_core::random_hex(6));
    tracing::info!(
        peer = %ip,
        conn_id,
        client = p.pointer("/client/id").and_then(|v| v.as_str()).unwrap_or(""),
        protocol = version.number(),
        "WebSocket client connected"
    );
    let grants = Grants::from_connect(p.get("scopes"));
    let mut hello = version.hello(&conn_id, &crate::methods::names());
    hello["scopes"] = grants.names().into();
    let _ = out.send(Out::Frame(protocol::ok(id, hello)));
    let _ = out.send(Out::Speak(version));
    Some(grants)
}

/// Requests, events, ticks and shutdown until the client leaves.
async fn serve(
    state: &AppState,
    grants: &Grants,
    stream: &mut futures_util::stream::SplitStream<WebSocket>,
    out: &mpsc::UnboundedSender<Out>,
) {
    let mut events = state.hub.subscribe();
    let mut stopping = state.stopping();
    let mut tick = tokio::time::interval(Duration::from_millis(TICK_INTERVAL_MS));
    tick.tick().await;
    loop {
        tokio::select! {
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if text.len() > MAX_PAYLOAD {
                        let e = MethodError::invalid(format!("frame of {} bytes is over the {MAX_PAYLOAD}-byte cap", text.len()));
                        let _ = out.send(Out::Frame(protocol::err(None, &e)));
                        let _ = out.send(Out::Close(close_code::SIZE, "frame too large".into()));
                        return;
                    }
                    request(state, grants, text.as_str(), out);
                }
                Some(Ok(Message::Binary(_))) => {
                    let e = MethodError::invalid("binary frames are not part of the protocol");
                    let _ = out.send(Out::Frame(protocol::err(None, &e)));
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
            event = events.recv() => match event {
                Ok(event) => { let _ = out.send(Out::Event(event)); }
                Err(broadcast::error::RecvError::Lagged(dropped)) => {
                    let _ = out.send(Out::Event(Event::Lagged(Lagged { dropped })));
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => {
                let _ = out.send(Out::Event(Event::Tick(Tick { ts: lurkbot_core::now_ms() })));
            }
            _ = stopping.changed() => {
                let reason = "the gateway is stopping".to_string();
                let _ = out.send(Out::Event(Event::Shutdown(Shutdown { reason })));
                let _ = out.send(Out::Close(close_code::AWAY, "gateway stopping".into()));
                return;
            }
        }
    }
}

/// Answers one request in its own task.
fn request(state: &AppState, grants: &Grants, text: &str, out: &mpsc::UnboundedSender<Out>) {
    let request = match protocol::parse_request(text) {
        Ok(r) => r,
        Err((id, e)) => {
            let _ = out.send(Out::Frame(protocol::err(id.as_deref(), &e)));
            return;
        }
    };
    let state = state.clone();
    let grants = grants.clone();
    let out = out.clone();
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        let answer = crate::methods::call(&state, &grants, &request.method, &request.params).await;
        let ms = started.elapsed().as_millis() as u64;
        let frame = match answer {
            Ok(payload) => {
                tracing::info!(method = request.method.as_str(), ok = true, ms, "rpc");
                protocol::ok(&request.id, payload)
            }
            Err(e) => {
                tracing::warn!(method = request.method.as_str(), ok = false, code = ?e.code, ms, "rpc");
                protocol::err(Some(&request.id), &e)
            }
        };
        let _ = out.send(Out::Frame(frame));
    });
}

async fn write_loop(
    mut sink: futures_util::stream::SplitSink<WebSocket, Message>,
    mut rx: mpsc::UnboundedReceiver<Out>,
) {
    let mut seq = 0u64;
    // The challenge precedes negotiation; every version shapes it the same.
    let mut version = ProtocolVersion::V1;
    while let Some(item) = rx.recv().await {
        let message = match item {
            Out::Frame(v) => Message::Text(v.to_string().into()),
            Out::Event(event) => {
                seq += 1;
                let frame = version.event_frame(&EventFrame { event, seq });
                Message::Text(frame.to_string().into())
            }
            Out::Speak(chosen) => {
                version = chosen;
                continue;
            }
            Out::Close(code, reason) => {
                let _ = sink
                    .send(Message::Close(Some(CloseFrame {
                        code,
                        reason: reason.chars().take(120).collect::<String>().into(),
                    })))
                    .await;
                break;
            }
        };
        if sink.send(message).await.is_err() {
            break;
        }
    }
}
