//! `logs.tail`: a bounded window of `logs/gateway.log`, OpenClaw's shape (`gateway.reload` is
//! `ops/reload.rs`'s).

use lurkbot_core::{DEFAULT_TAIL_BYTES, DEFAULT_TAIL_LINES, GATEWAY_LOG, Home};
use serde_json::{Value, json};

use crate::protocol::{ErrorCode, MethodError};

/// Most lines one `logs.tail` answers.
const MAX_TAIL_LINES: u64 = 5000;
/// Most bytes one `logs.tail` reads.
const MAX_TAIL_BYTES: u64 = 1_000_000;

/// `logs.tail {cursor?, limit?, maxBytes?}` → `{file, cursor, size, lines, truncated, reset}`.
pub(crate) fn logs_tail(home: &Home, params: &Value) -> Result<Value, MethodError> {
    if let Some(map) = params.as_object()
        && let Some(unknown) = map
            .keys()
            .find(|k| !["cursor", "limit", "maxBytes"].contains(&k.as_str()))
    {
        return Err(MethodError::invalid(format!(
            "logs.tail takes cursor, limit and maxBytes, not '{unknown}'"
        )));
    }
    let number = |name: &str, min: u64, max: u64| -> Result<Option<u64>, MethodError> {
        match params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(MethodError::invalid(format!(
                    "'{name}' must be an integer from {min} to {max}"
                ))),
            },
        }
    };
    let cursor = number("cursor", 0, u64::MAX)?;
    let limit = number("limit", 1, MAX_TAIL_LINES)?.map_or(DEFAULT_TAIL_LINES, |n| n as usize);
    let max_bytes = number("maxBytes", 1, MAX_TAIL_BYTES)?.unwrap_or(DEFAULT_TAIL_BYTES);
    let path = home.join(GATEWAY_LOG);
    let window = lurkbot_core::tail(&path, cursor, limit, max_bytes)
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?;
    Ok(json!({
        "file": path.display().to_string(),
        "cursor": window.cursor,
        "size": window.size,
        "lines": window.lines,
        "truncated": window.truncated,
        "reset": window.reset,
    }))
}
