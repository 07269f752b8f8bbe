//! `lurkbot agent --gateway URL`: the turn runs in the gateway's session host; its events are
//! shown exactly like a local turn's. Approval requests for the session are asked on the
//! terminal (denied without one); Ctrl-C sends `chat.abort`. After the turn, the command stays
//! until the session is idle (`sessions.wait`): the sub-agents it started report back as more
//! turns of the session, which are shown too (with `--json`, the sub-agents' own events as well,
//! each with its `sessionKey`). When the gateway goes away during the turn (a restart, a
//! deploy, a crash), the command reconnects and shows the turn's end once the gateway resumed it.

use crate::error::{CliError, CliResult};
use std::io::IsTerminal;

use lurkbot_agent::{AgentEvent, ApprovalRequest, Decision};
use lurkbot_core::{Home, SessionKey};
use lurkbot_gateway::protocol::{AgentStream, ChatState, Event, EventFrame, ToolPhase, method};
use serde_json::{Value, json};

use super::console::{line, show};
use super::remote::{Remote, gateway_token};

pub(crate) fn run(
    home: &Home,
    url: &str,
    session: &SessionKey,
    message: &str,
    json_mode: bool,
) -> CliResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let token = gateway_token(home);
    runtime.block_on(async {
        let mut gw = match Remote::connect(url, token.as_deref()).await {
            Ok(gw) => gw,
            Err(e) => return Err(CliError::failed("agent", format!("{e:#}"))),
        };
        let started = gw
            .call(
                method::CHAT_SEND,
                json!({"sessionKey": session.as_str(), "message": message}),
            )
            .await?;
        let run_id = match started {
            Ok(p) => p["runId"].as_str().unwrap_or_default().to_string(),
            Err((code, text)) => {
                let message = format!("the gateway refused: {code}: {text}");
                return Err(if code == "INVALID_REQUEST" {
                    CliError::usage("agent", message)
                } else {
                    CliError::failed("agent", message)
                });
            }
        };
        let mut follow = Follow::Run(run_id);
        let mut outcome: Option<CliResult> = None;
        // Runs of the session whose end was shown, and the one still to see once idle.
        let mut ended_runs: Vec<String> = Vec::new();
        let mut awaiting: Option<String> = None;
        loop {
            let event = tokio::select! {
                e = gw.event() => match (e, &follow) {
                    (Ok(e), _) => e,
                    // The gateway went away during the turn (a restart, a deploy, a crash):
                    // the next start resumes it; its end is seen there.
                    (Err(_), Follow::Run(run)) => {
                        return reattach(url, token.as_deref(), run, json_mode).await;
                    }
                    (Err(e), Follow::Session) => return Err(e.into()),
                },
                _ = tokio::signal::ctrl_c() => {
                    let _ = gw.call(method::CHAT_ABORT, json!({"sessionKey": session.as_str()})).await?;
                    if json_mode { line(&json!({"type": "cancelled"})); }
                    return Err(CliError::interrupted("agent", "cancelled; what ran so far is in the transcript"));
                }
            };
            let ticked = event["event"] == "tick";
            let ended = handle(&mut gw, &event, &follow, session, json_mode, &mut ended_runs).await?;
            if let Some(last) = &awaiting {
                if ended_runs.contains(last) {
                    return outcome.unwrap_or(Ok(()));
                }
                continue;
            }
            if let (Some(end), Follow::Run(_)) = (ended.as_ref(), &follow) {
                if end.is_err() {
                    return ended.unwrap_or(Ok(()));
                }
                outcome = ended;
                follow = Follow::Session;
            } else if ended.is_none() && !(ticked && matches!(follow, Follow::Session)) {
                continue;
            }
            // The turn is over: done once its sub-agents and their reports are, and their
            // last events (which may trail the answer) have been shown.
            if let Some(last) = idle(&mut gw, session).await? {
                for event in gw.take_buffered() {
                    handle(&mut gw, &event, &follow, session, json_mode, &mut ended_runs).await?;
                }
                match last {
                    Some(last) if !ended_runs.contains(&last) => awaiting = Some(last),
                    _ => return outcome.unwrap_or(Ok(())),
                }
            }
        }
    })
}

/// How long a client waits for a gateway that went away during its turn to come back.
const REATTACH_FOR: std::time::Duration = std::time::Duration::from_secs(120);

/// Reconnects to the gateway (for up to [`REATTACH_FOR`]) and waits for the end of `run_id`,
/// which the restarted gateway resumes from its journal (`agent.wait` answers from it too).
async fn reattach(url: &str, token: Option<&str>, run_id: &str, json_mode: bool) -> CliResult {
    eprintln!("\n[the gateway went away during the turn; waiting for it to come back]");
    let deadline = tokio::time::Instant::now() + REATTACH_FOR;
    let mut last_error;
    loop {
        match Remote::connect(url, token).await {
            Err(e) => last_error = format!("{e:#}"),
            Ok(mut gw) => loop {
                let wait = json!({"runId": run_id, "timeoutMs": 30_000});
                let answer = match gw.call(method::AGENT_WAIT, wait).await {
                    Ok(answer) => answer,
                    Err(e) => {
                        last_error = format!("{e:#}");
                        break;
                    }
                };
                let end = answer.map_err(|(code, text)| {
                    CliError::failed("agent", format!("the gateway refused: {code}: {text}"))
                })?;
                let text = end["text"].as_str().unwrap_or_default();
                match end["status"].as_str() {
                    Some("running") => continue,
                    Some("ok") if json_mode => {
                        line(&json!({"type": "done", "run_id": run_id, "text": text,
                            "payloads": [{"text": text, "mediaUrl": null}]}));
                        return Ok(());
                    }
                    Some("ok") => {
                        crate::run::print_stdout(&format!("{}\n", text.trim_end_matches('\n')))?;
                        return Ok(());
                    }
                    Some("aborted") => {
                        return Err(CliError::interrupted("agent", "the turn was aborted"));
                    }
                    _ => {
                        let message = end["message"].as_str().unwrap_or("the turn failed");
                        return Err(CliError::failed("agent", message.to_string()));
                    }
                }
            },
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(CliError::failed(
                "agent",
                format!(
                    "the gateway did not come back within 2 minutes ({last_error}); the turn goes on when it starts again (lurkbot sessions history shows it)"
                ),
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// Which events are shown.
enum Follow {
    /// The command's own run (and, with `--json`, the sub-agents' runs).
    Run(String),
    /// Every run of the session (the sub-agents' reports; with `--json`, the sub-agents'
    /// runs too).
    Session,
}

impl Follow {
    fn shows(&self, run: &str, key: &str, session: &SessionKey, json_mode: bool) -> bool {
        let child =
            json_mode && key.starts_with(&format!("agent:{}:subagent:", session.agent_id()));
        match self {
            Self::Run(id) => run == id || child,
            Self::Session => key == session.as_str() || child,
        }
    }
}

/// `Some(last run id)` when the session runs nothing any more (`sessions.wait`, which answers
/// as soon as it is idle, or after a second: events that arrive meanwhile are shown
/// afterwards); `None` while it still works.
async fn idle(gw: &mut Remote, session: &SessionKey) -> anyhow::Result<Option<Option<String>>> {
    let answer = gw
        .call(
            method::SESSIONS_WAIT,
            json!({"sessionKey": session.as_str(), "timeoutMs": 1000}),
        )
        .await?;
    // An older gateway without the method: nothing to wait for.
    Ok(match answer {
        Ok(p) if p["idle"] == false => None,
        Ok(p) => Some(p["lastRunId"].as_str().map(str::to_string)),
        Err(_) => Some(None),
    })
}

/// Shows one event; `Some(status)` when the run is over.
async fn handle(
    gw: &mut Remote,
    frame: &Value,
    follow: &Follow,
    session: &SessionKey,
    json_mode: bool,
    ended_runs: &mut Vec<String>,
) -> anyhow::Result<Option<CliResult>> {
    let tagged = |key: &str, event: &AgentEvent| {
        if json_mode {
            let mut value = super::console::event_json(event);
            value["sessionKey"] = json!(key);
            line(&value);
        } else {
            show(false, event);
        }
    };
    // Frames this build does not know (a newer gateway's events) are skipped.
    let Some(EventFrame { event, .. }) = EventFrame::parse(frame) else {
        return Ok(None);
    };
    match event {
        Event::ApprovalRequested(asked) if asked.session_key == session.as_str() => {
            let request = ApprovalRequest {
                id: asked.call_id,
                session: asked.session_key,
                tool: asked.tool,
                summary: asked.summary,
                reason: asked.reason,
                key: asked.key,
                once: !asked.allow_always,
            };
            show(json_mode, &AgentEvent::ApprovalPending(request.clone()));
            let decision = ask().await;
            show(
                json_mode,
                &AgentEvent::ApprovalResolved {
                    id: request.id,
                    decision,
                },
            );
            let _ = gw
                .call(
                    method::EXEC_APPROVAL_RESOLVE,
                    json!({"approvalId": asked.approval_id, "decision": decision}),
                )
                .await?;
        }
        Event::Chat(chat) if follow.shows(&chat.run_id, &chat.session_key, session, json_mode) => {
            let key = chat.session_key.as_str();
            let run_id = chat.run_id.as_str();
            let own = key == session.as_str();
            if own && !matches!(chat.state, ChatState::Delta { .. }) {
                ended_runs.push(run_id.to_string());
            }
            match chat.state {
                ChatState::Delta { text } => tagged(key, &AgentEvent::Text(text)),
                // A sub-agent's end is not the command's.
                _ if !own => {}
                ChatState::Final {
                    text, model, usage, ..
                } => {
                    if json_mode {
                        line(
                            &json!({"type": "done", "run_id": run_id, "model": model, "usage": usage, "sessionKey": key,
                                "text": text, "payloads": [{"text": text, "mediaUrl": null}]}),
                        );
                    } else if !text.ends_with('\n') {
                        crate::run::print_stdout("\n")?;
                    }
                    return Ok(Some(Ok(())));
                }
                ChatState::Aborted => {
                    return Ok(Some(Err(CliError::interrupted(
                        "agent",
                        "the turn was aborted",
                    ))));
                }
                ChatState::Error { message } => {
                    if json_mode {
                        line(&json!({"type": "error", "message": message}));
                    }
                    // Nothing configured is exit 2, through the gateway as in-process.
                    let unconfigured = lurkbot_agent::setup::NO_MODEL
                        .split('.')
                        .next()
                        .is_some_and(|first| message.contains(first));
                    return Ok(Some(Err(if unconfigured {
                        CliError::usage("agent", message)
                    } else {
                        CliError::failed("agent", message)
                    })));
                }
            }
        }
        Event::Agent(agent)
            if follow.shows(&agent.run_id, &agent.session_key, session, json_mode) =>
        {
            let key = agent.session_key.as_str();
            match agent.stream {
                AgentStream::Tool(ToolPhase::Start {
                    id,
                    name,
                    arguments,
                }) => tagged(
                    key,
                    &AgentEvent::ToolStart {
                        id,
                        name,
                        arguments,
                    },
                ),
                AgentStream::Tool(ToolPhase::End {
                    id,
                    name,
                    is_error,
                    preview,
                }) => tagged(
                    key,
                    &AgentEvent::ToolEnd {
                        id,
                        name,
                        is_error,
                        preview,
                    },
                ),
                _ => {}
            }
        }
        _ => {}
    }
    Ok(None)
}

/// The human's answer on the terminal; without one, deny.
async fn ask() -> Decision {
    if !std::io::stdin().is_terminal() {
        return Decision::Deny;
    }
    tokio::task::spawn_blocking(|| {
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        answer.parse().unwrap_or(Decision::Deny)
    })
    .await
    .unwrap_or(Decision::Deny)
}
