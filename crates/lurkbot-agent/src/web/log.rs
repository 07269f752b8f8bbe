//! The web log: one JSON line per search or fetch in `logs/web.jsonl` (append-only, 0600, state
//! no tool may write), cached answers included — what the agent looked up, when, for which
//! session, and what came back. Queries and URLs only: never a key, never page text.

use lurkbot_core::{Home, layout};
use serde::Serialize;

/// The log's file name under `logs/`.
pub const WEB_LOG: &str = "web.jsonl";

/// One line of the web log.
#[derive(Debug, Serialize)]
pub(crate) struct WebRecord<'a> {
    /// The session (or `cli` for the owner's `lurkbot search`).
    pub(crate) session: &'a str,
    /// `web_search` or `web_fetch`.
    pub(crate) tool: &'a str,
    /// The query or the URL.
    pub(crate) target: &'a str,
    /// The provider that answered (searches).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub(crate) provider: &'a str,
    /// Results, or characters returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) count: Option<usize>,
    /// Why nothing came back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'a str>,
    /// The answer was kept from an earlier request.
    pub(crate) cached: bool,
}

/// Appends `record` (a failure to write is logged, never fails the request).
pub(crate) fn record(home: &Home, record: &WebRecord<'_>) {
    #[derive(Serialize)]
    struct Line<'a> {
        ts_ms: u64,
        #[serde(flatten)]
        record: &'a WebRecord<'a>,
    }
    let line = Line {
        ts_ms: lurkbot_core::now_ms(),
        record,
    };
    let Ok(text) = serde_json::to_string(&line) else {
        return;
    };
    let path = home.join(layout::LOGS).join(WEB_LOG);
    if let Err(e) = lurkbot_core::append_private_line(&path, &text) {
        tracing::warn!(error = %e, "cannot append to logs/web.jsonl");
    }
}
