//! `/ws` (and `/`): the WebSocket protocol. The server speaks first (`connect.challenge {nonce,
//! ts}`); the client's first request must be `connect` with a protocol range containing 1
//! (LurkBot's) or 3–4 (OpenClaw's, see [`crate::openclaw`]) and the token;
//! anything else, or a wrong token, gets an error response and the connection is closed. After
//! `hello-ok`, requests run concurrently (each answered by id), events arrive numbered by a
//! per-connection `seq`, and a `tick` is sent every 15 s. Frames over the payload cap are
//! refused with `INVALID_REQUEST` and the connection is closed.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use crate::protocol::Out;
use crate::protocol::{
    self, Challenge, ErrorCode, Event, Grants, Lagged, MAX_PAYLOAD, MethodError, PROTOCOL_VERSION,
    ProtocolVersion, TICK_INTERVAL_MS, Tick,
};
use crate::state::AppState;
use crate::transport::writer::{Writer, binary_refused};

/// Time allowed for the `connect` request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest frame accepted before `connect` succeeded (an unauthenticated client sends little).
pub const PRE_CONNECT_MAX: usize = 64 * 1024;

/// The upgrade handler.
pub(crate) async fn upgrade(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    // Host and Origin were checked by the router's guard (crate::access::http::guard).
    if let Some(wait) = state.limiter.blocked(addr.ip()) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many failed attempts; try again in {wait} s"),
        )
            .into_response();
    }
    // The web UI's sign-in on a shared gateway (read now: the upgrade's headers go away).
    let sign_in = crate::users::tenants::cookie(&headers, crate::users::tenants::SESSION_COOKIE)
        .filter(|_| state.users.is_some())
        .map(str::to_string);
    // Small buffers: a thousand idle connections should cost little memory.
    ws.max_message_size(MAX_PAYLOAD * 2)
        .max_frame_size(MAX_PAYLOAD * 2)
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .on_upgrade(move |socket| connection(socket, state, addr.ip(), sign_in))
}

/// `GET /`: the WebSocket when the request is an upgrade (OpenClaw's clients connect to the
/// URL as given, so `ws://host:port` means `/`), the web UI otherwise.
pub(crate) async fn root(
    state: State<AppState>,
    addr: ConnectInfo<SocketAddr>,
    request: axum::extract::Request,
) -> Response {
    use axum::extract::FromRequestParts;
    let wants_socket = request
        .headers()
        .get(axum::http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if !wants_socket {
        return crate::transport::ui::index(request.headers());
    }
    let (mut parts, _) = request.into_parts();
    match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(ws) => upgrade(state, addr, parts.headers, ws).await,
        Err(rejection) => rejection.into_response(),
    }
}

async fn connection(socket: WebSocket, state: AppState, ip: IpAddr, sign_in: Option<String>) {
    let _counted = state.connection_guard();
    let (sink, mut stream) = socket.split();
    // One task per connection reads, answers and writes; only requests that wait (a turn, a
    // file) get a task of their own, whose answer comes back through `out`.
    let mut writer = Writer::new(sink);
    let (out, mut rx) = mpsc::unbounded_channel::<Out>();
    let challenge = Challenge {
        nonce: lurkbot_core::random_hex(16),
        ts: lurkbot_core::now_ms(),
    };
    if !writer
        .write(Out::Event(Event::ConnectChallenge(challenge.clone())))
        .await
    {
        return;
    }
    let joined = handshake(
        &state,
        &mut stream,
        &out,
        (ip, sign_in.as_deref()),
        &challenge,
    )
    .await;
    while let Ok(item) = rx.try_recv() {
        if !writer.write(item).await {
            return;
        }
    }
    match joined {
        Some(Joined::Operator(joined)) => {
            let (conn, own) = *joined;
            serve(&own, &conn, &mut stream, (&out, &mut rx), &mut writer).await;
            tracing::info!(peer = %ip, "WebSocket client left");
        }
        Some(Joined::Node(node)) => {
            drop(out);
            crate::transport::node_link::serve(&state, &node, &mut stream, &mut rx, &mut writer)
                .await;
        }
        None => {}
    }
}

/// Who a connection turned out to be.
enum Joined {
    /// An operator (the CLI, the web UI, OpenClaw's clients), served with its own state (a
    /// user's, on a shared gateway).
    Operator(Box<(Conn, AppState)>),
    /// A node (a device serving commands).
    Node(crate::transport::node_link::NodeConn),
}

/// One connection after its handshake.
struct Conn {
    /// Its scopes.
    grants: Grants,
    /// The version it speaks.
    version: ProtocolVersion,
    /// Its `sessions.subscribe` (OpenClaw's dialect).
    subscribed: Arc<AtomicBool>,
    /// Held when its `connect` lists `"canvas"` in `caps` (it shows widgets).
    _canvas: Option<crate::state::CanvasViewer>,
    /// Who it signed in as.
    signed: crate::users::tenants::Signed,
}

/// Reads and answers the `connect` request; the connection's scopes and version, or `None`
/// when it must close.
async fn handshake(
    state: &AppState,
    stream: &mut futures_util::stream::SplitStream<WebSocket>,
    out: &mpsc::UnboundedSender<Out>,
    (ip, sign_in): (IpAddr, Option<&str>),
    challenge: &Challenge,
) -> Option<Joined> {
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
    // OpenClaw's clients may carry the shared secret as `auth.password`.
    let given = ["/auth/token", "/auth/password"]
        .iter()
        .find_map(|at| p.pointer(at).and_then(Value::as_str))
        .unwrap_or("");
    let signed = match crate::access::credentials::identify(state, given, sign_in, ip) {
        Ok(signed) => signed,
        Err(refusal) => {
            return refuse(
                Some(id),
                crate::access::credentials::refused_connect(state, ip, refusal, version),
            );
        }
    };
    match p.get("role").and_then(Value::as_str).unwrap_or("operator") {
        "operator" => {}
        "node" if signed.user.is_some() => {
            return refuse(
                Some(id),
                MethodError::new(
                    ErrorCode::Forbidden,
                    "a node connects with the gateway token, not a user's",
                ),
            );
        }
        "node" => {
            return crate::transport::node_link::handshake(
                state,
                version,
                (id, p),
                challenge,
                out,
                ip,
            )
            .map(Joined::Node);
        }
        other => {
            return refuse(
                Some(id),
                MethodError::invalid(format!("unknown role '{other}' (operator or node)")),
            );
        }
    }
    let own = match &state.members {
        Some(members) => match members.state_for(state, &signed) {
            Ok(own) => own,
            Err(e) => {
                return refuse(
                    Some(id),
                    MethodError::new(ErrorCode::Unavailable, e.to_string()),
                );
            }
        },
        None => state.clone(),
    };
    let state = &own;
    let conn_id = format!("conn_{}", lurkbot_core::random_hex(6));
    tracing::info!(
        peer = %ip,
        conn_id,
        client = p.pointer("/client/id").and_then(|v| v.as_str()).unwrap_or(""),
        protocol = version.number(),
        "WebSocket client connected"
    );
    let grants = match Grants::from_connect(p.get("scopes")) {
        Ok(grants) => grants,
        Err(e) => return refuse(Some(id), MethodError::invalid(e)),
    };
    let subscribed = Arc::new(AtomicBool::new(false));
    if version.is_openclaw() {
        let hello = crate::openclaw::hello(state, version, &conn_id, &grants);
        let _ = out.send(Out::Frame(protocol::ok(id, hello)));
        let _ = out.send(Out::SpeakOpenClaw(subscribed.clone()));
        // OpenClaw's gateway pushes its presence and health right after hello-ok.
        let presence = serde_json::json!({"presence": crate::openclaw::presence(state)});
        let _ = out.send(Out::Shaped("presence", presence));
        let _ = out.send(Out::Shaped("health", crate::openclaw::health(state)));
    } else {
        let mut hello = version.hello(&conn_id, &crate::methods::names());
        hello["scopes"] = grants.names().into();
        if state.users.is_some() {
            hello["signedIn"] = signed.describe();
        }
        let _ = out.send(Out::Frame(protocol::ok(id, hello)));
    }
    let shows_canvas = p
        .get("caps")
        .and_then(Value::as_array)
        .is_some_and(|caps| caps.iter().any(|c| c == "canvas"));
    Some(Joined::Operator(Box::new((
        Conn {
            grants,
            version,
            subscribed,
            _canvas: shows_canvas.then(|| state.canvas_viewer()),
            signed,
        },
        own.clone(),
    ))))
}

/// Requests, answers of requests still running, events, ticks and shutdown until the client
/// leaves.
async fn serve(
    state: &AppState,
    conn: &Conn,
    stream: &mut futures_util::stream::SplitStream<WebSocket>,
    (out, rx): (
        &mpsc::UnboundedSender<Out>,
        &mut mpsc::UnboundedReceiver<Out>,
    ),
    writer: &mut Writer,
) {
    let mut events = state.hub.subscribe();
    let mut stopping = state.stopping();
    // On a shared gateway: a change of the users (a new token, a removal, a sign-out) makes
    // the connection check its credential again, and close when it no longer holds.
    let mut users_changed = state.users.as_ref().map(|u| u.changes());
    // (A change between the handshake and this subscription is caught here.)
    if !still_signed_in(state, conn) {
        let _ = writer
            .write(Out::Close(
                SIGNED_OUT,
                "signed out: the credential was revoked".into(),
            ))
            .await;
        return;
    }
    // Approvals asked before this connection (a client back after a restart) are shown too.
    for pending in state.approver.pending_list() {
        let _ = out.send(Out::Event(Event::ApprovalRequested(pending)));
    }
    let mut tick = tokio::time::interval(Duration::from_millis(TICK_INTERVAL_MS));
    tick.tick().await;
    loop {
        let item = tokio::select! {
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if writer.refused_oversized(text.len()).await {
                        return;
                    }
                    match request(state, conn, text.as_str(), out) {
                        Some(answer) => Out::Frame(answer),
                        None => continue,
                    }
                }
                Some(Ok(Message::Binary(_))) => binary_refused(),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => continue,
            },
            // `out` is held here too, so this never ends.
            Some(item) = rx.recv() => item,
            event = events.recv() => match event {
                Ok(event) => Out::Event(Arc::unwrap_or_clone(event)),
                Err(broadcast::error::RecvError::Lagged(dropped)) => {
                    Out::Event(Event::Lagged(Lagged { dropped }))
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = crate::users::tenants::changed(&mut users_changed) => {
                if still_signed_in(state, conn) {
                    continue;
                }
                Out::Close(SIGNED_OUT, "signed out: the credential was revoked".into())
            }
            _ = tick.tick() => {
                if !still_signed_in(state, conn) {
                    let _ = writer.write(Out::Close(SIGNED_OUT, "signed out: the sign-in expired".into())).await;
                    return;
                }
                Out::Event(Event::Tick(Tick { ts: lurkbot_core::now_ms() }))
            }
            _ = stopping.changed() => {
                writer.say_stopping().await;
                return;
            }
        };
        if matches!(item, Out::Event(_)) {
            // An answer sent before the event was published goes first (a run's `accepted`
            // before its first event), as when both went through one queue.
            while let Ok(earlier) = rx.try_recv() {
                if !writer.write(earlier).await {
                    return;
                }
            }
        }
        if !writer.write(item).await {
            return;
        }
    }
}

/// The close code of a connection whose credential was revoked or expired (4001, as a
/// rejected node's: an application code, "not allowed any more").
pub(crate) const SIGNED_OUT: u16 = 4001;

/// Whether the connection's credential still holds (always, off a shared gateway).
fn still_signed_in(state: &AppState, conn: &Conn) -> bool {
    state
        .users
        .as_ref()
        .is_none_or(|users| users.still_valid(&conn.signed))
}

/// Answers one request: at once when its method never waits (the answer is returned), else in
/// a task of its own whose answer is sent to `out`.
fn request(
    state: &AppState,
    conn: &Conn,
    text: &str,
    out: &mpsc::UnboundedSender<Out>,
) -> Option<Value> {
    let request = match protocol::parse_request(text) {
        Ok(r) => r,
        Err((id, e)) => return Some(protocol::err(id.as_deref(), &e)),
    };
    if let Some(refused) = crate::methods::users::refused_for(state, &request.method) {
        return Some(finish(&request, Err(refused), std::time::Instant::now()));
    }
    if !conn.version.is_openclaw()
        && let Some(answer) =
            crate::methods::call_now(state, &conn.grants, &request.method, &request.params)
    {
        return Some(finish(&request, answer, std::time::Instant::now()));
    }
    let state = state.clone();
    let grants = conn.grants.clone();
    let openclaw = conn.version.is_openclaw().then(|| {
        let interim_out = out.clone();
        let id = request.id.clone();
        crate::openclaw::Conn {
            grants: grants.clone(),
            subscribed: conn.subscribed.clone(),
            interim: Arc::new(move |payload| {
                let _ = interim_out.send(Out::Frame(protocol::ok(&id, payload)));
            }),
        }
    });
    let out = out.clone();
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        let answer = match &openclaw {
            Some(conn) => {
                crate::openclaw::call(&state, conn, &request.method, &request.params).await
            }
            None => crate::methods::call(&state, &grants, &request.method, &request.params).await,
        };
        let _ = out.send(Out::Frame(finish(&request, answer, started)));
    });
    None
}

/// The response frame of a request, logged.
fn finish(
    request: &protocol::Request,
    answer: Result<Value, MethodError>,
    started: std::time::Instant,
) -> Value {
    let ms = started.elapsed().as_millis() as u64;
    let method = request.method.as_str();
    match answer {
        Ok(payload) => {
            if crate::methods::is_quiet(method) {
                tracing::debug!(method, ok = true, ms, "rpc");
            } else {
                tracing::info!(method, ok = true, ms, "rpc");
            }
            protocol::ok(&request.id, payload)
        }
        Err(e) => {
            tracing::warn!(method, ok = false, code = ?e.code, ms, "rpc");
            protocol::err(Some(&request.id), &e)
        }
    }
}
