//! `browser.status`, `browser.start`, `browser.stop`: the owner's view of the managed Chromium
//! (`lurkbot browser`, the web UI, `status`). The browser belongs to this process: it is the
//! one the agent's `browser` tool drives, stopped with the gateway.

use serde_json::{Value, json};

use crate::protocol::{ErrorCode, MethodError};
use crate::turns::host::SessionHost;

/// `browser.start`.
pub(crate) async fn start(s: &SessionHost) -> Result<Value, MethodError> {
    let config = s.config();
    if !config.browser.enabled {
        return Err(MethodError::new(
            ErrorCode::InvalidRequest,
            "the browser is off ([browser] enabled = false in config.toml)",
        ));
    }
    let browser = lurkbot_agent::home_browser(&s.home, &config).await;
    let note = browser
        .start(lurkbot_agent::page_rules(&config))
        .await
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, format!("{}: {e}", e.code())))?;
    let mut v = crate::ops::status::browser_state(s).await;
    v["note"] = json!(note);
    Ok(v)
}

/// `browser.stop`.
pub(crate) async fn stop(s: &SessionHost) -> Result<Value, MethodError> {
    let config = s.config();
    let browser = lurkbot_agent::home_browser(&s.home, &config).await;
    let was = browser.stop().await;
    let mut v = crate::ops::status::browser_state(s).await;
    v["stopped"] = json!(was);
    Ok(v)
}
