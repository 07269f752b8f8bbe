//! Sub-agents (ARCHITECTURE.md §7, OpenClaw's `sessions_spawn`): a child session
//! `agent:<id>:subagent:<hex>` runs one task with the minimal prompt and the sub-agent tool
//! policy; the spawn returns at once. When the child ends (ok, error or timeout) an announce
//! message — status, findings, a stats line — becomes one more turn of the requester's session.
//! Depth (default 1: children cannot spawn) and children per session are limited.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lurkbot_core::{Home, SessionKey, SubagentsConfig};
use serde::Serialize;

use crate::runtime::{Runtime, TurnRequest, finish_within};
use crate::subagents::Child;
use crate::transcript::Sessions;

/// What becomes of the child's session after the announce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Cleanup {
    /// Keep it (default).
    #[default]
    Keep,
    /// Delete it.
    Delete,
}

/// A spawn request (the tool's arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnArgs {
    /// The task.
    pub task: String,
    /// A label for people.
    pub label: Option<String>,
    /// A model for the child.
    pub model: Option<String>,
    /// A thinking level for the child.
    pub thinking: Option<String>,
    /// Longest the child may run.
    pub run_timeout: Duration,
    /// Most tokens the child's run may use.
    pub budget_tokens: Option<u64>,
    /// What becomes of the child's session.
    pub cleanup: Cleanup,
}

/// The answer to a spawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// Always `accepted`.
    pub status: &'static str,
    /// The child's session.
    pub child_session_key: String,
    /// The child's run.
    pub run_id: String,
}

/// Spawns a child for `requester`; the child's run and the announce go on in the background.
///
/// # Errors
/// The depth or children limit (saying which setting raises it), or the child not starting.
pub async fn spawn(
    runtime: Arc<dyn Runtime>,
    home: &Home,
    limits: &SubagentsConfig,
    requester: &SessionKey,
    args: SpawnArgs,
) -> Result<Accepted, String> {
    if args.task.trim().is_empty() {
        return Err("the task is empty: say what the sub-agent should do".into());
    }
    let registry = runtime.subagents();
    let depth = registry.depth_of(requester.as_str()) + 1;
    let max_depth = limits.max_depth.clamp(1, 5);
    if depth > max_depth {
        return Err(format!(
            "a sub-agent at depth {} cannot spawn (agent.subagents.max_depth = {max_depth}, at most 5)",
            depth - 1
        ));
    }
    let running = registry.children_of(requester.as_str()).len();
    let max_children = limits.max_children.clamp(1, 5);
    if running >= max_children {
        return Err(format!(
            "this session already runs {running} sub-agents (agent.subagents.max_children = {max_children}); wait for one to report back"
        ));
    }
    let child = SessionKey::parse(&format!(
        "agent:{}:subagent:{}",
        requester.agent_id(),
        lurkbot_core::random_hex(8)
    ))
    .map_err(|e| e.to_string())?;
    registry.insert(
        child.as_str(),
        Child {
            requester: requester.as_str().to_string(),
            depth,
            label: args.label.clone(),
        },
    );
    let started = Instant::now();
    let request = TurnRequest {
        session: child.clone(),
        message: args.task.clone(),
        model: args.model.clone(),
        thinking: args.thinking.clone(),
        one_off: true,
        budget: args.budget_tokens.map(|limit| crate::usage::RunBudget {
            cap: "sessions_spawn runBudgetTokens (default agent.subagents.run_budget_tokens)"
                .into(),
            limit,
            used: 0,
            daily: false,
        }),
        // Recorded with who asked, so a gateway that resumes the child after a restart
        // reports to them ([`SpawnSource`]).
        source: Some(
            SpawnSource {
                child: child.as_str().to_string(),
                requester: requester.as_str().to_string(),
                delete: args.cleanup == Cleanup::Delete,
            }
            .to_string(),
        ),
    };
    let handle = match runtime.start(request).await {
        Ok(h) => h,
        Err(e) => {
            registry.remove(child.as_str());
            return Err(e);
        }
    };
    let accepted = Accepted {
        status: "accepted",
        child_session_key: child.as_str().to_string(),
        run_id: handle.run_id.clone(),
    };
    let flow_runtime = runtime.clone();
    let handle_run_id = handle.run_id.clone();
    let home = home.clone();
    let requester_key = requester.clone();
    runtime.track(
        requester,
        Box::pin(async move {
            let result = finish_within(&*flow_runtime, &child, handle, args.run_timeout).await;
            flow_runtime.subagents().remove(child.as_str());
            let message = announcement(&args.task, &child, &result, started.elapsed());
            if args.cleanup == Cleanup::Delete {
                let _ = Sessions::open(&home, child.agent_id()).delete(&child);
            }
            match flow_runtime
                .start(report_request(&requester_key, message, &handle_run_id))
                .await
            {
                Ok(turn) => {
                    if let Err(e) = turn.done.await {
                        tracing::warn!(session = requester_key.as_str(), error = %e, "sub-agent announce turn failed");
                    }
                }
                Err(e) => {
                    tracing::warn!(session = requester_key.as_str(), error = %e, "sub-agent announce not delivered");
                }
            }
        }),
    );
    Ok(accepted)
}

/// The source id a sub-agent's turn is admitted under: `spawn:<child>|<requester>|keep|delete`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSource {
    /// The child's session key.
    pub child: String,
    /// The session that spawned it (the report goes there).
    pub requester: String,
    /// Whether the child's session is deleted after its report.
    pub delete: bool,
}

impl std::fmt::Display for SpawnSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cleanup = if self.delete { "delete" } else { "keep" };
        write!(f, "spawn:{}|{}|{cleanup}", self.child, self.requester)
    }
}

impl SpawnSource {
    /// The spawn a turn's source id names, if it is one.
    pub fn parse(source: &str) -> Option<Self> {
        let mut parts = source.strip_prefix("spawn:")?.split('|');
        let (child, requester, cleanup) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Self {
            child: child.to_string(),
            requester: requester.to_string(),
            delete: cleanup == "delete",
        })
    }
}

/// The requester's turn that reports the child run `child_run`: admitted under
/// `report:<child run>`, so the report is made once, whichever process makes it.
pub fn report_request(requester: &SessionKey, message: String, child_run: &str) -> TurnRequest {
    let mut request = TurnRequest::new(requester.clone(), message);
    request.source = Some(format!("report:{child_run}"));
    request
}

/// The announce message (the seed's wording): status, the child's last reply, a stats line.
pub fn announcement(
    task: &str,
    child: &SessionKey,
    result: &Result<crate::outcome::TurnOutcome, String>,
    elapsed: Duration,
) -> String {
    let task_label: String = if task.chars().count() > 50 {
        format!("{}...", task.chars().take(50).collect::<String>())
    } else {
        task.to_string()
    };
    let (status, findings, stats) = match result {
        Ok(done) => (
            "completed",
            if done.text.trim().is_empty() {
                "(no output)".to_string()
            } else {
                done.text.trim().to_string()
            },
            format!(
                ", model={}, tokens={} in / {} out",
                done.model, done.usage.input_tokens, done.usage.output_tokens
            ),
        ),
        Err(e) if e.starts_with("timed out") => ("timed out", format!("({e})"), String::new()),
        Err(e) => ("failed", format!("(error: {e})"), String::new()),
    };
    format!(
        "A background task \"{task_label}\" just {status}.\n\nFindings:\n{findings}\n\n[Stats: duration={:.1}s{stats}, session={}]\n\nSummarize this naturally for the user. Keep it brief (1-2 sentences).",
        elapsed.as_secs_f64(),
        child.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_announcement_names_status_findings_and_stats() {
        let child = SessionKey::parse("agent:main:subagent:abc").expect("key");
        let long = "x".repeat(80);
        let text = announcement(
            &long,
            &child,
            &Err("timed out after 2 s".into()),
            Duration::from_millis(2100),
        );
        assert!(text.starts_with(&format!(
            "A background task \"{}...\" just timed out.",
            "x".repeat(50)
        )));
        assert!(text.contains("[Stats: duration=2.1s, session=agent:main:subagent:abc]"));
        let failed = announcement("t", &child, &Err("no model".into()), Duration::ZERO);
        assert!(failed.contains("just failed.") && failed.contains("(error: no model)"));
    }
}
