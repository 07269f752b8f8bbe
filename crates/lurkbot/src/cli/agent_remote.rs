//! `lurkbot agent --gateway URL`: the turn runs in the gateway's session host; its events are
//! shown exactly like a local turn's. Approval requests for the session are asked on the
//! terminal (denied without one); Ctrl-C sends `chat.abort`.

use std::io::IsTerminal;
use std::process::ExitCode;

use lurkbot_agent::{AgentEvent, ApprovalRequest, Decision};
use lurkbot_core::{Home, SessionKey};
use serde_json::{Value, json};

use super::console::{line, show};
use super::remote::{Remote, gateway_token};

pub(crate) fn run(
    home: &Home,
    url: &str,
    session: &SessionKey,
    message: &str,
    json_mode: bool,
) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let token = gateway_token(home);
    runtime.block_on(async {
        let mut gw = match Remote::connect(url, token.as_deref()).await {
            Ok(gw) => gw,
            Err(e) => {
                eprintln!("lurkbot agent: {e:#}");
                return Ok(ExitCode::from(1));
            }
        };
        let started = gw
            .call(
                "chat.send",
                json!({"sessionKey": session.as_str(), "message": message}),
            )
            .await?;
        let run_id = match started {
            Ok(p) => p["runId"].as_str().unwrap_or_default().to_string(),
            Err((code, text)) => {
                eprintln!("lurkbot agent: the gateway refused: {code}: {text}");
                return Ok(ExitCode::from(if code == "INVALID_REQUEST" {
                    2
                } else {
                    1
                }));
            }
        };
        loop {
            let event = tokio::select! {
                e = gw.event() => e?,
                _ = tokio::signal::ctrl_c() => {
                    let _ = gw.call("chat.abort", json!({"sessionKey": session.as_str()})).await?;
                    if json_mode { line(&json!({"type": "cancelled"})); }
                    eprintln!("\nlurkbot agent: cancelled; what ran so far is in the transcript");
                    return Ok(ExitCode::from(130));
                }
            };
            if let Some(status) = handle(&mut gw, &event, &run_id, session, json_mode).await? {
                return Ok(status);
            }
        }
    })
}

/// Shows one event; `Some(status)` when the run is over.
async fn handle(
    gw: &mut Remote,
    event: &Value,
    run_id: &str,
    session: &SessionKey,
    json_mode: bool,
) -> anyhow::Result<Option<ExitCode>> {
    let p = &event["payload"];
    let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
    match event["event"].as_str().unwrap_or_default() {
        "exec.approval.requested" if p["sessionKey"] == session.as_str() => {
            let request = ApprovalRequest {
                id: s("callId"),
                session: s("sessionKey"),
                tool: s("tool"),
                summary: s("summary"),
                reason: s("reason"),
                key: s("key"),
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
                    "exec.approval.resolve",
                    json!({"approvalId": p["approvalId"], "decision": decision}),
                )
                .await?;
        }
        _ if p["runId"] != run_id => {}
        "chat" => match p["state"].as_str().unwrap_or_default() {
            "delta" => show(json_mode, &AgentEvent::Text(s("text"))),
            "final" => {
                if json_mode {
                    line(
                        &json!({"type": "done", "run_id": run_id, "model": p["model"], "usage": p["usage"]}),
                    );
                } else if !s("text").ends_with('\n') {
                    crate::run::print_stdout("\n")?;
                }
                return Ok(Some(ExitCode::SUCCESS));
            }
            "aborted" => {
                eprintln!("lurkbot agent: the turn was aborted");
                return Ok(Some(ExitCode::from(130)));
            }
            _ => {
                if json_mode {
                    line(&json!({"type": "error", "message": p["message"]}));
                }
                eprintln!("lurkbot agent: {}", s("message"));
                return Ok(Some(ExitCode::from(1)));
            }
        },
        "agent" if p["stream"] == "tool" => {
            let d = &p["data"];
            let ds = |k: &str| d[k].as_str().unwrap_or_default().to_string();
            match d["phase"].as_str() {
                Some("start") => show(
                    json_mode,
                    &AgentEvent::ToolStart {
                        id: ds("id"),
                        name: ds("name"),
                        arguments: ds("arguments"),
                    },
                ),
                Some("end") => show(
                    json_mode,
                    &AgentEvent::ToolEnd {
                        id: ds("id"),
                        name: ds("name"),
                        is_error: d["isError"] == true,
                        preview: ds("preview"),
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
