//! The heartbeat (ARCHITECTURE.md §7): a periodic turn on `workspace/HEARTBEAT.md`
//! and the system events cron jobs queued for it (`wakeMode = next-heartbeat`). The turn runs on
//! its own session, `cron:heartbeat`, so a `HEARTBEAT_OK` or a repeated alert never shows in the
//! owner's chat; an alert that is `sent` is appended to the main session (where the web UI
//! shows it) and delivered to the target. The seed's order: disabled → `skipped/disabled`; outside active
//! hours → `skipped/quiet-hours`; a turn running on the main session →
//! `skipped/requests-in-flight`; no file → `skipped/no-heartbeat-file`; only blank lines and `#`
//! comments → `ok-empty/empty-heartbeat-file` (none of these calls the model); a reply with
//! `HEARTBEAT_OK` and at most 300 other characters → `ok-token` (not delivered); the same alert
//! within 24 h → `skipped/duplicate` (remembered in `cron/heartbeat.json`, so a restart does
//! not forget); otherwise `sent` to the target; a model error → `failed`.

use std::time::{Duration, Instant};

use lurkbot_core::{Config, Home, SessionKey, Zone, layout};
use serde::{Deserialize, Serialize};

use crate::runtime::{Outbound, Runtime, TurnRequest, finish_within};

/// The token a model answers when nothing needs attention.
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";
/// Other characters a `HEARTBEAT_OK` reply may carry and still not be delivered.
const ACK_MAX_CHARS: usize = 300;
/// How long an alert is remembered against repeats.
const DEDUP_MS: u64 = 24 * 3_600_000;
/// Longest a heartbeat turn runs.
const TURN_TIMEOUT: Duration = Duration::from_secs(600);

/// How a heartbeat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeartbeatStatus {
    /// An alert was delivered.
    Sent,
    /// HEARTBEAT.md has nothing to check.
    OkEmpty,
    /// The model said nothing needs attention.
    OkToken,
    /// Not run (see the reason).
    Skipped,
    /// The model call failed.
    Failed,
}

/// The `heartbeat` event and `lurkbot heartbeat run --json`'s output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatEvent {
    /// When it ran (ms since the epoch).
    pub ts: u64,
    /// How it ended.
    pub status: HeartbeatStatus,
    /// Why (`disabled`, `quiet-hours`, `requests-in-flight`, `no-heartbeat-file`,
    /// `empty-heartbeat-file`, `duplicate`, or a failure's message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The alert's first 100 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// Where it went (`sent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// How long the model turn took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl HeartbeatEvent {
    fn new(ts: u64, status: HeartbeatStatus, reason: Option<&str>) -> Self {
        Self {
            ts,
            status,
            reason: reason.map(str::to_string),
            preview: None,
            channel: None,
            duration_ms: None,
        }
    }
}

/// Runs one heartbeat at `now_ms` (see the module documentation).
pub async fn run_heartbeat(
    runtime: &dyn Runtime,
    home: &Home,
    config: &Config,
    now_ms: u64,
) -> HeartbeatEvent {
    use HeartbeatStatus::{Failed, OkEmpty, OkToken, Sent, Skipped};
    let settings = &config.heartbeat;
    if !settings.enabled {
        return HeartbeatEvent::new(now_ms, Skipped, Some("disabled"));
    }
    if !active(config, now_ms) {
        return HeartbeatEvent::new(now_ms, Skipped, Some("quiet-hours"));
    }
    let main = SessionKey::main();
    if runtime.busy(&main) {
        return HeartbeatEvent::new(now_ms, Skipped, Some("requests-in-flight"));
    }
    let path = home.join(layout::WORKSPACE).join("HEARTBEAT.md");
    let events = EventQueue::load(home);
    let content = match std::fs::read_to_string(&path) {
        Ok(content) => content,
        Err(_) if events.events.is_empty() => {
            return HeartbeatEvent::new(now_ms, Skipped, Some("no-heartbeat-file"));
        }
        Err(_) => String::new(),
    };
    if crate::prompt::effectively_empty(&content) && events.events.is_empty() {
        return HeartbeatEvent::new(now_ms, OkEmpty, Some("empty-heartbeat-file"));
    }
    let prompt = prompt(settings.prompt.as_deref(), &content, &events.events);
    let session = heartbeat_session();
    let started = Instant::now();
    let mut request = TurnRequest::new(session.clone(), prompt);
    request.budget = settings.budget_tokens.map(|limit| {
        let zone = crate::usage::zone(config);
        let who = format!("session:{}", session.as_str());
        let (today, _) = crate::usage::Ledger::of(home).totals(&zone, now_ms, Some(&who));
        crate::usage::RunBudget {
            cap: "heartbeat.budget_tokens".into(),
            limit,
            used: today.tokens,
            daily: true,
        }
    });
    let result = match runtime.start(request).await {
        Ok(handle) => finish_within(runtime, &session, handle, TURN_TIMEOUT).await,
        Err(e) => Err(e),
    };
    if result.is_ok()
        && let Err(e) = EventQueue::default().save(home)
    {
        tracing::warn!(error = %e, "heartbeat events not cleared");
    }
    let duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    let reply = match result {
        Ok(done) => done.text,
        Err(e) => {
            return HeartbeatEvent {
                duration_ms,
                ..HeartbeatEvent::new(now_ms, Failed, Some(&e))
            };
        }
    };
    let alert = reply.trim();
    if alert.contains(HEARTBEAT_OK)
        && alert.replace(HEARTBEAT_OK, "").trim().chars().count() <= ACK_MAX_CHARS
    {
        return HeartbeatEvent {
            duration_ms,
            ..HeartbeatEvent::new(now_ms, OkToken, None)
        };
    }
    let mut memory = AlertMemory::load(home);
    if memory.seen(alert, now_ms) {
        return HeartbeatEvent {
            duration_ms,
            ..HeartbeatEvent::new(now_ms, Skipped, Some("duplicate"))
        };
    }
    memory.remember(alert, now_ms);
    if let Err(e) = memory.save(home) {
        tracing::warn!(error = %e, "heartbeat alert memory not saved");
    }
    let preview = Some(alert.chars().take(100).collect());
    let target = settings.target.as_str();
    if target == "none" {
        if let Err(e) = crate::session_notes::append_to_main(home, alert) {
            tracing::warn!(error = %e, "heartbeat alert not written to the main session");
        }
        return HeartbeatEvent {
            preview,
            duration_ms,
            ..HeartbeatEvent::new(now_ms, Sent, None)
        };
    }
    let delivered = runtime
        .deliver(Outbound {
            channel: target.to_string(),
            to: None,
            text: alert.to_string(),
            from: heartbeat_session(),
            // The target is config.toml's `[heartbeat] target`: the owner chose it.
            asker: crate::gate::Asker::Owner,
        })
        .await;
    // The main session keeps every alert sent: webchat delivery wrote it there already.
    if !delivered.as_ref().is_ok_and(|c| c.starts_with("webchat"))
        && let Err(e) = crate::session_notes::append_to_main(home, alert)
    {
        tracing::warn!(error = %e, "heartbeat alert not written to the main session");
    }
    match delivered {
        Ok(channel) => HeartbeatEvent {
            preview,
            duration_ms,
            channel: Some(channel),
            ..HeartbeatEvent::new(now_ms, Sent, None)
        },
        Err(e) => HeartbeatEvent {
            preview,
            duration_ms,
            ..HeartbeatEvent::new(now_ms, Failed, Some(&format!("not delivered: {e}")))
        },
    }
}

/// Whether `now_ms` lies in `[heartbeat.active_hours]` (read in its zone, else
/// `agent.timezone`, else the system's).
pub fn active(config: &Config, now_ms: u64) -> bool {
    let hours = &config.heartbeat.active_hours;
    let Ok(Some(window)) = hours.minutes() else {
        return true;
    };
    let zone_name = hours.tz.as_deref().or(config.agent.timezone.as_deref());
    let zone = Zone::of(zone_name).unwrap_or_else(|_| Zone::utc());
    let ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
    let local_s = ms / 1000 + i64::from(zone.offset_at(ms).local_minus_utc());
    let minute = u32::try_from(local_s.rem_euclid(86_400) / 60).unwrap_or(0);
    lurkbot_core::within_window(window, minute)
}

/// The session heartbeat turns run on.
pub fn heartbeat_session() -> SessionKey {
    SessionKey::parse("cron:heartbeat").unwrap_or_else(|_| SessionKey::main())
}

fn prompt(custom: Option<&str>, content: &str, events: &[QueuedEvent]) -> String {
    let head = custom.unwrap_or(
        "## Heartbeat Check\n\nIt's time for your periodic check. Please review and handle these tasks:",
    );
    let mut content = content.trim().to_string();
    if !events.is_empty() {
        content.push_str("\n\nSystem events since the last heartbeat:");
        for event in events {
            content.push_str(&format!("\n- {}", event.text));
        }
    }
    format!(
        "{head}\n\n{}\n\nAfter completing checks:\n1. If anything needs user attention, notify them\n2. If no action needed, respond with {HEARTBEAT_OK}\n\nKeep responses brief and actionable.",
        content.trim()
    )
}

/// Queues a system event for the next heartbeat (a cron job with `wakeMode = next-heartbeat`).
///
/// # Errors
/// The queue file failing.
pub fn queue_system_event(
    home: &Home,
    text: &str,
    now_ms: u64,
) -> Result<(), lurkbot_core::CoreError> {
    let mut queue = EventQueue::load(home);
    queue.events.push(QueuedEvent {
        ts: now_ms,
        text: text.to_string(),
    });
    queue.save(home)
}

/// `cron/heartbeat-events.json`: system events waiting for the next heartbeat.
#[derive(Debug, Default, Serialize, Deserialize)]
struct EventQueue {
    events: Vec<QueuedEvent>,
}

#[derive(Debug, Serialize, Deserialize)]
struct QueuedEvent {
    ts: u64,
    text: String,
}

impl EventQueue {
    fn path(home: &Home) -> std::path::PathBuf {
        home.join(layout::CRON).join("heartbeat-events.json")
    }

    fn load(home: &Home) -> Self {
        read_private_json(&Self::path(home))
    }

    fn save(&self, home: &Home) -> Result<(), lurkbot_core::CoreError> {
        write_private_json(&Self::path(home), self)
    }
}

/// A small state file, or the empty state when it is missing or unreadable.
fn read_private_json<T: serde::de::DeserializeOwned + Default>(path: &std::path::Path) -> T {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn write_private_json(
    path: &std::path::Path,
    value: &impl Serialize,
) -> Result<(), lurkbot_core::CoreError> {
    if let Some(dir) = path.parent() {
        lurkbot_core::create_private_dir(dir)?;
    }
    let text = serde_json::to_vec(value).unwrap_or_default();
    lurkbot_core::write_atomic_with_mode(path, &text, 0o600)
}

/// Alerts sent in the last 24 hours (`cron/heartbeat.json`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct AlertMemory {
    alerts: Vec<SentAlert>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SentAlert {
    ts: u64,
    text: String,
}

impl AlertMemory {
    fn path(home: &Home) -> std::path::PathBuf {
        home.join(layout::CRON).join("heartbeat.json")
    }

    fn load(home: &Home) -> Self {
        read_private_json(&Self::path(home))
    }

    fn seen(&self, text: &str, now_ms: u64) -> bool {
        self.alerts
            .iter()
            .any(|a| a.text == text && now_ms.saturating_sub(a.ts) < DEDUP_MS)
    }

    fn remember(&mut self, text: &str, now_ms: u64) {
        self.alerts
            .retain(|a| now_ms.saturating_sub(a.ts) < DEDUP_MS);
        self.alerts.push(SentAlert {
            ts: now_ms,
            text: text.to_string(),
        });
    }

    fn save(&self, home: &Home) -> Result<(), lurkbot_core::CoreError> {
        write_private_json(&Self::path(home), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_only_is_empty_and_the_window_reads_the_zone() {
        assert!(crate::prompt::effectively_empty(
            "# Tasks\n\n   # none yet\n"
        ));
        assert!(!crate::prompt::effectively_empty(
            "# Tasks\n- check the feeds\n"
        ));
        let toml =
            "[heartbeat.active_hours]\nstart = \"08:00\"\nend = \"22:00\"\ntz = \"Asia/Tokyo\"\n";
        let config = Config::parse(std::path::Path::new("c.toml"), toml).expect("parses");
        // 2026-01-01T00:00:00Z is 09:00 in Tokyo: active; 14:00Z is 23:00 there: quiet.
        assert!(active(&config, 1_767_225_600_000));
        assert!(!active(&config, 1_767_225_600_000 + 14 * 3_600_000));
    }

    #[test]
    fn an_alert_is_remembered_for_a_day() {
        let mut memory = AlertMemory::default();
        memory.remember("disk almost full", 1_000);
        assert!(memory.seen("disk almost full", 1_000 + DEDUP_MS - 1));
        assert!(!memory.seen("disk almost full", 1_000 + DEDUP_MS));
        assert!(!memory.seen("another alert", 2_000));
    }
}
