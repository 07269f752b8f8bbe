//! `usage.summary {since?: "30d" | "YYYY-MM-DD", by?: "day" | "agent" | "model" | "session"}`:
//! the usage records summed, and the budgets' fill — what `lurkbot usage --json` prints.

use lurkbot_agent::usage::{By, parse_since, summarize, today, zone};
use serde_json::{Value, json};

use crate::protocol::MethodError;
use crate::turns::host::SessionHost;

/// `usage.summary`: the usage records summed, and the budgets' fill.
pub(crate) fn summary(state: &SessionHost, params: &Value) -> Result<Value, MethodError> {
    let config = state.config();
    let raw_since = params.get("since").and_then(Value::as_str).unwrap_or("30d");
    let by: By = params
        .get("by")
        .and_then(Value::as_str)
        .unwrap_or("day")
        .parse()
        .map_err(MethodError::invalid)?;
    let since = parse_since(raw_since, today(&zone(&config))).ok_or_else(|| {
        MethodError::invalid(format!(
            "since '{raw_since}' is not a number of days (7d) or a date (2026-11-01)"
        ))
    })?;
    Ok(json!(summarize(
        &state.home,
        &config,
        since,
        by,
        lurkbot_core::now_ms()
    )))
}
