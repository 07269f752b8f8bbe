//! The OpenAI-compatible HTTP API, so any OpenAI SDK can talk to the agent:
//! `GET /v1/models` and `POST /v1/chat/completions` (stream and non-stream), with the gateway
//! token as the bearer key.
//!
//! `model` is `lurkbot` or `lurkbot/<agentId>`. With the `x-lurkbot-session` header the turn
//! runs on that session, whose history the gateway keeps: only the last user message is sent to
//! the agent. Without it every request gets a fresh session seeded with the request's earlier
//! messages (system messages become a leading user note), so the API is stateless as OpenAI's.
//! Tool activity is hidden: the answer is the agent's text. Streaming sends
//! `chat.completion.chunk` deltas and `data: [DONE]`.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lurkbot_agent::{AgentEvent, Entry, Sessions};
use lurkbot_core::SessionKey;
use lurkbot_llm::Message;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::access::http::{GatewayAuth, HttpError, MAX_CHAT_BODY, read_body_up_to};
use crate::protocol::MethodError;
use crate::state::AppState;
use crate::turns::run::TurnOptions;

/// `GET /v1/models`.
pub(crate) async fn models(GatewayAuth(state): GatewayAuth) -> Response {
    let mut ids = vec!["lurkbot".to_string(), "lurkbot/main".to_string()];
    ids.extend(state.config().agents.keys().map(|a| format!("lurkbot/{a}")));
    ids.dedup();
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "lurkbot"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    // Credentials come from the headers and are checked before a byte of the body is read.
    GatewayAuth(state): GatewayAuth,
    request: Request,
) -> Response {
    if let Some(stopping) = HttpError::if_stopping(&state.host) {
        return stopping.into_response();
    }
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let body = match read_body_up_to(body, MAX_CHAT_BODY).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let idempotency = match crate::api::idempotency::key_of(&headers) {
        Ok(key) => key,
        Err(e) => return e.into_response(),
    };
    let mut turn = match prepare(&state, &headers, &body) {
        Ok(turn) => turn,
        Err(e) => return e.into_response(),
    };
    let raw = std::mem::take(&mut turn.raw_images);
    turn.options.images = match crate::api::images::ready(&state.home, raw).await {
        Ok(images) => images,
        Err(e) => return HttpError::bad_request(e).into_response(),
    };
    if let Some(key) = idempotency {
        let run_id = format!("run_{}", lurkbot_core::random_hex(8));
        let source = crate::api::idempotency::source(&key);
        let admitted = state.host.admit_source(
            &run_id,
            &source,
            &turn.key,
            &turn.message,
            &turn.options,
            turn.fresh,
        );
        match admitted {
            Ok(None) => {
                turn.options.admitted = true;
                turn.run_id = run_id;
            }
            Ok(Some(known)) => return attached(&state, turn, known).await,
            Err(e) => return HttpError::store_down(e.message).into_response(),
        }
    }
    if turn.stream {
        stream(state, turn).into_response()
    } else {
        complete(state, turn).await
    }
}

struct Turn {
    key: SessionKey,
    message: String,
    model: String,
    stream: bool,
    /// `stream_options.include_usage`: a usage chunk before `[DONE]` (and `usage: null` on
    /// every other chunk), as OpenAI's API sends it.
    include_usage: bool,
    /// A fresh session made for this request: released when it ends.
    fresh: bool,
    /// The pictures of the last user message, as sent (`image_url` data URLs).
    raw_images: Vec<Vec<u8>>,
    /// The turn's options (its pictures, once made ready).
    options: TurnOptions,
    /// Its run id.
    run_id: String,
}

fn prepare(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<Turn, HttpError> {
    let request: Value = serde_json::from_slice(body)
        .map_err(|e| HttpError::bad_request(format!("the body is not JSON: {e}")))?;
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("lurkbot")
        .to_string();
    let agent = match model.split_once('/') {
        None if model == "lurkbot" => "main",
        Some(("lurkbot", agent)) if !agent.is_empty() => agent,
        _ => {
            return Err(HttpError::new(
                StatusCode::NOT_FOUND,
                "model_not_found",
                format!("model '{model}' does not exist; use 'lurkbot' or 'lurkbot/<agentId>'"),
            ));
        }
    };
    if !state.config().has_agent(agent) {
        return Err(HttpError::new(
            StatusCode::NOT_FOUND,
            "model_not_found",
            format!(
                "no agent '{agent}' is configured; GET /v1/models lists them (add [agents.{agent}] to config.toml for a new one)"
            ),
        ));
    }
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| HttpError::bad_request("'messages' must be a non-empty array"))?;
    let text_of = |m: &Value| -> String {
        match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    };
    let role_of = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let last = messages
        .last()
        .filter(|m| role_of(m) == "user")
        .ok_or_else(|| HttpError::bad_request("the last message must have role 'user'"))?;
    let message = text_of(last);
    let raw_images = crate::api::images::data_urls(last)?;
    if message.trim().is_empty() && raw_images.is_empty() {
        return Err(HttpError::bad_request("the last user message is empty"));
    }
    let header_key = headers
        .get("x-lurkbot-session")
        .and_then(|v| v.to_str().ok());
    let fresh = header_key.is_none();
    let key = match header_key {
        Some(raw) => {
            let key = SessionKey::parse(raw).map_err(|e| HttpError::bad_request(e.to_string()))?;
            if !state.config().has_agent(key.agent_id()) {
                return Err(HttpError::new(
                    StatusCode::NOT_FOUND,
                    "model_not_found",
                    crate::turns::run::unknown_agent(key.agent_id()).message,
                ));
            }
            key
        }
        None => {
            let key = SessionKey::parse(&format!(
                "agent:{agent}:dm:openai:{}",
                lurkbot_core::random_hex(8)
            ))
            .map_err(|e| HttpError::bad_request(e.to_string()))?;
            seed(
                state,
                &key,
                &messages[..messages.len() - 1],
                &role_of,
                &text_of,
            )?;
            key
        }
    };
    Ok(Turn {
        key,
        message,
        model,
        stream: request
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        include_usage: request
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        fresh,
        raw_images,
        options: TurnOptions {
            trace_parent: crate::access::http::trace_parent(headers),
            ..TurnOptions::default()
        },
        run_id: format!("run_{}", lurkbot_core::random_hex(8)),
    })
}

/// Writes a stateless request's earlier messages into its fresh session.
fn seed(
    state: &AppState,
    key: &SessionKey,
    earlier: &[Value],
    role_of: &dyn Fn(&Value) -> String,
    text_of: &dyn Fn(&Value) -> String,
) -> Result<(), HttpError> {
    if earlier.is_empty() {
        return Ok(());
    }
    let sessions = Sessions::open(&state.home, key.agent_id());
    let entry = sessions.get_or_create(key)?;
    let entries: Vec<Entry> = earlier
        .iter()
        .filter_map(|m| {
            let text = text_of(m);
            let message = match role_of(m).as_str() {
                "system" | "developer" => {
                    Message::user(format!("[instructions from the API client]\n{text}"))
                }
                "assistant" => Message::assistant(text, Vec::new()),
                "user" => Message::user(text),
                _ => return None,
            };
            Some(Entry::Message {
                ts: lurkbot_core::now_ms(),
                message,
            })
        })
        .collect();
    Ok(sessions.append(&entry.session_id, &entries)?)
}

fn completion_id() -> String {
    format!("chatcmpl-{}", lurkbot_core::random_hex(12))
}

fn now_secs() -> u64 {
    lurkbot_core::now_ms() / 1000
}

/// A turn that could not start: `409` while its session is busy; `503` with `Retry-After` when
/// the state store could not record it (the same answer as when it could not be admitted);
/// `404` for an agent that does not exist.
fn busy(e: MethodError) -> HttpError {
    if e.message.starts_with(crate::turns::durable::NOT_RECORDED) {
        return HttpError::store_down(e.message);
    }
    if e.code == crate::protocol::ErrorCode::NotFound {
        return HttpError::new(StatusCode::NOT_FOUND, "model_not_found", e.message);
    }
    HttpError::new(StatusCode::CONFLICT, "busy", e.message)
}

/// A retried request (its `Idempotency-Key` known): the answer of the turn the first one
/// started, in the form this one asked for.
async fn attached(state: &AppState, turn: Turn, known: lurkbot_state::TurnRecord) -> Response {
    if turn.fresh {
        // The fresh session seeded for this request is not needed: the first one's answers.
        let _ = Sessions::open(&state.home, turn.key.agent_id()).delete(&turn.key);
    }
    let text = match crate::api::idempotency::attach(&state.host, known, &turn.message).await {
        Ok(crate::api::idempotency::Attached::Answered(text)) => text,
        Ok(crate::api::idempotency::Attached::Failed(message)) => {
            return HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!(
                    "this request's turn failed ({message}); to ask again, send it with a new Idempotency-Key"
                ),
            )
            .into_response();
        }
        Err(e) => return e.into_response(),
    };
    if !turn.stream {
        return axum::Json(completion(
            &turn.model,
            &text,
            lurkbot_llm::Usage::default(),
        ))
        .into_response();
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": completion_id(), "object": "chat.completion.chunk", "created": now_secs(),
            "model": turn.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let body = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A `chat.completion` answering `text`.
fn completion(model: &str, text: &str, usage: lurkbot_llm::Usage) -> Value {
    json!({
        "id": completion_id(),
        "object": "chat.completion",
        "created": now_secs(),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"}],
        "usage": {"prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens},
    })
}

async fn complete(state: AppState, turn: Turn) -> Response {
    let run_id = turn.run_id.clone();
    let spawned = state.host.spawn_run(
        turn.key,
        turn.message,
        turn.options,
        turn.fresh,
        Box::new(|_| {}),
        turn.run_id,
    );
    let handle = match spawned {
        Ok((_, handle)) => handle,
        Err(e) => {
            // Not started: its key may start a turn when the session is free.
            state.host.withdraw(&run_id);
            return busy(e).into_response();
        }
    };
    match handle.await {
        Ok(Ok(done)) => axum::Json(completion(&turn.model, &done.text, done.usage)).into_response(),
        Ok(Err(e)) => HttpError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.message)
            .into_response(),
        Err(_) => HttpError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "aborted",
            "the turn was aborted (chat.abort or the gateway stopping)",
        )
        .into_response(),
    }
}

fn stream(state: AppState, turn: Turn) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let id = completion_id();
    let usage_id = id.clone();
    let created = now_secs();
    let model = turn.model.clone();
    let include_usage = turn.include_usage;
    let chunk = move |delta: Value, finish: Value| {
        let mut v = json!({"id": id, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        if include_usage {
            v["usage"] = Value::Null;
        }
        Bytes::from(format!("data: {v}\n\n"))
    };
    let usage_model = turn.model.clone();
    let sender = tx.clone();
    let text_chunk = chunk.clone();
    let on_event = Box::new(move |event: &AgentEvent| {
        if let AgentEvent::Text(text) = event {
            let _ = sender.send(text_chunk(json!({"content": text}), Value::Null));
        }
    });
    let _ = tx.send(chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ));
    let run_id = turn.run_id.clone();
    let handle = match state.host.spawn_run(
        turn.key,
        turn.message,
        turn.options,
        turn.fresh,
        on_event,
        turn.run_id,
    ) {
        Ok((_, handle)) => handle,
        Err(e) => {
            state.host.withdraw(&run_id);
            return busy(e).into_response();
        }
    };
    tokio::spawn(async move {
        let (error, usage) = match handle.await {
            Ok(Ok(done)) => (None, Some(done.usage)),
            Ok(Err(e)) => (Some(("unavailable", e.message)), None),
            Err(_) => (Some(("aborted", "the turn was aborted".to_string())), None),
        };
        match error {
            None => {
                let _ = tx.send(chunk(json!({}), json!("stop")));
                if let (true, Some(usage)) = (include_usage, usage) {
                    let v = json!({"id": usage_id, "object": "chat.completion.chunk",
                        "created": created, "model": usage_model, "choices": [],
                        "usage": {"prompt_tokens": usage.input_tokens,
                            "completion_tokens": usage.output_tokens,
                            "total_tokens": usage.input_tokens + usage.output_tokens}});
                    let _ = tx.send(Bytes::from(format!("data: {v}\n\n")));
                }
            }
            Some((kind, message)) => {
                let error = json!({"error": {"message": message, "type": kind}});
                let _ = tx.send(Bytes::from(format!("data: {error}\n\n")));
            }
        }
        let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n"));
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
