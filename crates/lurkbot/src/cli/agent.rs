//! `lurkbot agent -m MESSAGE`: one agent turn, the reply streamed to stdout as it arrives and
//! tool calls shown on stderr as they happen (`--json`: one JSON event per line on stdout).
//!
//! The model comes from `--model`, else `LURKBOT_MODEL`, else `agent.model` in config.toml;
//! `agent.fallbacks` follow it (see `lurkbot_agent::setup`).

use crate::error::{CliError, CliResult};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use clap::Args;
use lurkbot_agent::{AgentEvent, LocalRuntime, NoHuman, Runtime, TurnRequest};
use lurkbot_core::{Config, Home, SessionKey, layout};
use lurkbot_llm::Failover;
use serde_json::json;

use super::console::{AskHuman, line, show};
use super::line_reader::LineReader;

/// Flags of `lurkbot agent`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 answered, 1 the model failed, 2 nothing configured or a bad flag.\n\nExamples:\n  LURKBOT_MODEL=openai/gpt-4o-mini lurkbot agent -m \"What is in my feeds?\"\n  lurkbot agent --json --session agent:main:dm:cli:me -m hello"
)]
pub(crate) struct AgentArgs {
    /// The message.
    #[arg(short, long, value_name = "TEXT")]
    message: String,
    /// Session the turn belongs to.
    #[arg(long, value_name = "KEY", default_value = "agent:main:main")]
    session: String,
    /// Model as provider/model (overrides LURKBOT_MODEL and agent.model).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    model: Option<String>,
    /// One JSON event per line on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Run the turn in a gateway's session host (ws://HOST:PORT/ws; default
    /// LURKBOT_GATEWAY_URL).
    #[arg(long, value_name = "URL")]
    gateway: Option<String>,
}

/// The home, its config and the models to use; a usage error saying what is missing (`who`
/// names the subcommand in the message).
pub(crate) fn prepare(
    home_path: &Path,
    model: Option<&str>,
    who: &'static str,
) -> Result<(Home, Config, Failover), CliError> {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    lurkbot_agent::setup::attach_state(&home, &config)
        .map_err(|e| CliError::failed(who, e.to_string()))?;
    match lurkbot_agent::setup::failover(&home, &config, model) {
        Ok(failover) => Ok((home, config, failover)),
        Err(e) if e.is_config() => Err(CliError::usage(who, e.to_string())),
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn run(home_path: &Path, args: AgentArgs) -> CliResult {
    let session = SessionKey::parse(&args.session)?;
    if let Some(url) = super::remote::gateway_url(args.gateway.as_deref()) {
        if args.model.is_some() {
            return Err(CliError::usage(
                "agent",
                "--model cannot be combined with --gateway (the gateway's model answers)",
            ));
        }
        let home = Home::open(home_path)?;
        return super::agent_remote::run(&home, &url, &session, &args.message, args.json);
    }
    let (home, config, _) = prepare(home_path, args.model.as_deref(), "agent")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Approvals are asked on the terminal; without one (a pipe, a script) they are denied.
    let approver: Arc<dyn lurkbot_agent::Approver> = if std::io::stdin().is_terminal() {
        let _guard = runtime.enter();
        Arc::new(AskHuman {
            lines: LineReader::start(false, None),
        })
    } else {
        Arc::new(NoHuman)
    };
    let json = args.json;
    // With --json every session's events are shown, tagged with their session; on a terminal
    // only this session's (its sub-agents report back into it).
    let shown = session.clone();
    let sink: lurkbot_agent::EventSink = Arc::new(move |key: &SessionKey, event: &AgentEvent| {
        if json {
            let mut value = super::console::event_json(event);
            value["sessionKey"] = json!(key.as_str());
            line(&value);
        } else if *key == shown {
            show(false, event);
        }
    });
    // Traces go where the gateway's would (`[otel]`, `OTEL_EXPORTER_OTLP_*`): the turn's span
    // and its children, sent before the command ends.
    let exporter = lurkbot_gateway::otel::target(&home, &config).map(|target| {
        let _guard = runtime.enter();
        lurkbot_gateway::otel::start(target, config.otel.capture_content, None)
    });
    let local = LocalRuntime::new(home, config, approver, sink);
    let request = TurnRequest {
        model: args.model.clone(),
        ..TurnRequest::new(session.clone(), args.message.clone())
    };
    let outcome = runtime.block_on(async {
        let turn = async {
            // MCP servers start together, each within its startup timeout; one that fails is
            // reported by its tools' errors and never stops the turn.
            local.mcp().start().await;
            let handle = local.start(request).await?;
            let result = handle.done.await;
            // The sub-agents it spawned and their announce turns end before the command does.
            local.idle().await;
            result
        };
        tokio::select! {
            outcome = turn => Some(outcome),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    if let Some(exporter) = exporter {
        runtime.block_on(lurkbot_gateway::otel::stop(exporter));
    }
    let Some(outcome) = outcome else {
        runtime.block_on(local.abort(&session));
        if json {
            line(&json!({"type": "cancelled"}));
        }
        return Err(CliError::interrupted(
            "agent",
            "cancelled; what ran so far is in the transcript",
        ));
    };
    match outcome {
        Ok(done) => {
            if json {
                line(
                    &json!({"type": "done", "session_id": done.session_id, "model": done.model,
                    "usage": done.usage, "steps": done.steps, "sessionKey": session.as_str(),
                    "text": done.text, "payloads": [{"text": done.text, "mediaUrl": null}]}),
                );
            } else if !done.text.ends_with('\n') {
                let _ = crate::run::print_stdout("\n");
            }
            Ok(())
        }
        Err(e) => {
            if json {
                line(&json!({"type": "error", "message": e}));
            }
            Err(CliError::failed("agent", e))
        }
    }
}
