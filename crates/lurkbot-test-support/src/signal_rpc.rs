//! The JSON-RPC methods of the signal-cli test daemon (`signal_server`), answered as
//! signal-cli answers them: params named as its CLI options in camelCase (a list option takes
//! one value or an array, also under its plural name), errors with its codes (-1 a user error,
//! -5 a rate limit, -32601 an unknown method, -32600 a request that is not JSON-RPC).

use std::sync::{Condvar, Mutex};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::signal_state::{Call, OWN_UUID, State};

const STYLES: &[&str] = &["BOLD", "ITALIC", "SPOILER", "STRIKETHROUGH", "MONOSPACE"];

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": null}, "id": id})
}

/// A list option: its value (one or an array) under its name or its plural.
fn list(params: &Value, name: &str) -> Vec<String> {
    let value = params
        .get(name)
        .or_else(|| params.get(format!("{name}s")))
        .cloned()
        .unwrap_or(Value::Null);
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Value::String(one) => vec![one],
        _ => Vec::new(),
    }
}

/// The answer to one request body.
pub(crate) fn answer(shared: &(Mutex<State>, Condvar), body: &[u8]) -> Value {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error(&Value::Null, -32700, "Failed to parse JSON");
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = request["method"].as_str() else {
        return error(&id, -32600, "method field must be set");
    };
    let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
    let mut state = shared.0.lock().unwrap();
    if let Some(account) = params["account"].as_str()
        && account != state.account
    {
        return error(&id, -32602, "Specified account does not exist");
    }
    let result = match method {
        "send" => send(&mut state, &params),
        "sendTyping" => target(&state, &params).map(|_| json!({})),
        "sendReceipt" => receipt(&params),
        "getAttachment" => attachment(&state, &params),
        "getUserStatus" => Ok(user_status(&state, &params)),
        "version" => Ok(json!({"version": "0.14.6"})),
        _ => Err((-32601, "Method not implemented".to_string())),
    };
    match result {
        Ok(result) => {
            state.calls.push(Call {
                method: method.to_string(),
                params,
            });
            json!({"jsonrpc": "2.0", "result": result, "id": id})
        }
        Err((code, message)) => error(&id, code, &message),
    }
}

type Answer = Result<Value, (i64, String)>;

/// The recipient or the group of a call: exactly one, and known.
fn target(state: &State, params: &Value) -> Result<String, (i64, String)> {
    let recipients = list(params, "recipient");
    let groups = list(params, "groupId");
    match (recipients.as_slice(), groups.as_slice()) {
        ([number], []) if state.registered.contains(number) => Ok(number.clone()),
        ([number], []) => Err((
            -1,
            format!("Failed to send message: {number}: Unregistered user"),
        )),
        ([], [group]) if state.groups.contains(group) => Ok(group.clone()),
        ([], [group]) => Err((-1, format!("Invalid group id: {group}"))),
        _ => Err((-1, "No recipients given".to_string())),
    }
}

fn send(state: &mut State, params: &Value) -> Answer {
    let to = target(state, params)?;
    let text = params["message"].as_str().unwrap_or_default();
    let attachments = list(params, "attachment");
    if text.is_empty() && attachments.is_empty() {
        return Err((
            -1,
            "Sending empty message is not allowed, either a message or an attachment must be given."
                .into(),
        ));
    }
    for attachment in &attachments {
        let decodable = attachment
            .strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"))
            .is_some_and(|(_, data)| {
                base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .is_ok()
            });
        if !decodable {
            return Err((-1, format!("Invalid attachment: {attachment:.40}")));
        }
    }
    let units = text.encode_utf16().count();
    for style in list(params, "textStyle") {
        let parts: Vec<&str> = style.splitn(3, ':').collect();
        let valid = match parts.as_slice() {
            [start, length, name] => {
                let (start, length) = (start.parse::<usize>(), length.parse::<usize>());
                matches!((start, length), (Ok(s), Ok(l)) if s + l <= units) && STYLES.contains(name)
            }
            _ => false,
        };
        if !valid {
            return Err((-1, format!("Invalid text style: {style}")));
        }
    }
    if state.rate_limits > 0 {
        state.rate_limits -= 1;
        return Err((-5, "Failed to send message due to rate limiting".into()));
    }
    state.clock += 1000;
    let kind = if to.starts_with('+') {
        "number"
    } else {
        "groupId"
    };
    Ok(json!({"timestamp": state.clock,
        "results": [{"recipientAddress": {kind: to}, "type": "SUCCESS"}]}))
}

fn receipt(params: &Value) -> Answer {
    if list(params, "recipient").len() != 1 {
        return Err((-1, "No recipients given".into()));
    }
    if params["targetTimestamp"].is_null() {
        return Err((-1, "No target timestamp given".into()));
    }
    Ok(json!({}))
}

fn attachment(state: &State, params: &Value) -> Answer {
    let id = params["id"].as_str().unwrap_or_default();
    state
        .attachments
        .iter()
        .find(|(i, _)| i == id)
        .map(|(_, bytes)| json!({"data": base64::engine::general_purpose::STANDARD.encode(bytes)}))
        .ok_or_else(|| (-1, format!("Attachment file not found: {id}")))
}

/// `getUserStatus`: each recipient's number and ACI, registered or not.
fn user_status(state: &State, params: &Value) -> Value {
    list(params, "recipient")
        .iter()
        .map(|r| {
            let uuid = if *r == state.account {
                Some(OWN_UUID.to_string())
            } else {
                state
                    .registered
                    .contains(r)
                    .then(|| format!("00000000-0000-4000-8000-{:0>12}", r.trim_start_matches('+')))
            };
            json!({"recipient": r, "number": r, "uuid": uuid, "isRegistered": uuid.is_some()})
        })
        .collect()
}
