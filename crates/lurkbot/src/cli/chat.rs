//! `lurkbot chat`: an interactive loop on one session. Each line is a turn (the reply streams
//! as it arrives, tool calls show on stderr); slash commands:
//! `/new` starts a fresh session under the same key, `/think <off|minimal|low|medium|high>`
//! sets the thinking level (without a level, shows it), `/status` shows the session, model,
//! usage and thinking level, `/help` lists these, `/quit` (or end of input) leaves.
//!
//! Approval prompts read the answer from the next input line (`y` allow once, `a` always,
//! `n` deny). Ctrl-C during a turn cancels it (what ran so far stays in the transcript, marked
//! cancelled); Ctrl-C at the prompt leaves. Input may be piped, which is how it is tested.

use crate::error::CliResult;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use clap::Args;
use lurkbot_agent::{Agent, AgentEvent, Sessions};
use lurkbot_core::{Home, SessionKey};

use super::console::{AskHuman, show};
use super::line_reader::{CHAT_HISTORY, LineReader};
use super::markdown::MarkdownStream;

/// Flags of `lurkbot chat`.
#[derive(Debug, Args)]
#[command(
    after_help = "In the chat: /new  /think <level>  /status  /help  /quit\n\nExample:\n  LURKBOT_MODEL=openai/gpt-4o-mini lurkbot chat --session agent:main:dm:cli:me"
)]
pub(crate) struct ChatArgs {
    /// Session to chat in.
    #[arg(long, value_name = "KEY", default_value = "agent:main:main")]
    session: String,
    /// Model as provider/model (overrides LURKBOT_MODEL and agent.model).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    model: Option<String>,
}

const HELP: &str = "/new             start a fresh session (the old transcript is kept)\n/think <level>   off, minimal, low, medium or high\n/status          session, model, usage, thinking level\n/quit            leave (also Ctrl-D)\n";

pub(crate) fn run(home_path: &Path, args: ChatArgs) -> CliResult {
    let session = SessionKey::parse(&args.session)?;
    let (home, config, failover) = super::agent::prepare(home_path, args.model.as_deref(), "chat")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let interactive = std::io::stdin().is_terminal();
    let lines = LineReader::start(interactive, Some(home.join(CHAT_HISTORY)));
    let model = failover.primary().to_string();
    // Traces go where the gateway's would (`[otel]`, `OTEL_EXPORTER_OTLP_*`), each turn's sent
    // as it ends and the rest before the command does.
    let exporter = lurkbot_gateway::otel::target(&home, &config).map(|target| {
        let _guard = runtime.enter();
        lurkbot_gateway::otel::start(target, config.otel.capture_content, None)
    });
    let agent = Agent::new(home.clone(), config, failover).with_approver(Arc::new(AskHuman {
        lines: lines.clone(),
    }));
    let result = runtime.block_on(chat(home, agent, session, model, lines));
    if let Some(exporter) = exporter {
        runtime.block_on(lurkbot_gateway::otel::stop(exporter));
    }
    result
}

async fn chat(
    home: Home,
    mut agent: Agent,
    session: SessionKey,
    model: String,
    lines: LineReader,
) -> CliResult {
    let interactive = std::io::stdin().is_terminal();
    let styled = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let sessions = Sessions::open(&home, session.agent_id());
    let entry = sessions.get_or_create(&session)?;
    eprintln!(
        "lurkbot chat: session {} ({}), model {model}, {} so far. /help for commands.",
        session.as_str(),
        entry.session_id,
        match entry.turns {
            1 => "1 turn".to_string(),
            n => format!("{n} turns"),
        }
    );
    let prompt = if interactive { "> " } else { "" };
    loop {
        let line = tokio::select! {
            line = lines.read(prompt) => line,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else {
            return Ok(());
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix('/') {
            let (name, rest) = command.split_once(' ').unwrap_or((command, ""));
            match name {
                "quit" | "exit" => return Ok(()),
                "help" => eprint!("{HELP}"),
                "new" => {
                    let id = sessions.reset(&session)?;
                    eprintln!("new session {id}");
                }
                "think" if rest.trim().is_empty() => eprintln!("thinking: {}", agent.thinking()),
                "think" => match agent.set_thinking(rest) {
                    Ok(()) => eprintln!("thinking: {}", agent.thinking()),
                    Err(e) => eprintln!("{e}"),
                },
                "status" => {
                    let entry = sessions.get_or_create(&session)?;
                    // What the next request would send: system prompt, tools and history.
                    let context = agent.next_request_tokens(&session)?;
                    let window = agent.context_window().max(1);
                    crate::run::print_stdout(&format!(
                        "session: {}\nid: {}\nmodel: {}\nturns: {}\ntokens: {} in, {} out\ncontext: about {context} of {window} tokens ({:.1} %)\nthinking: {}\n",
                        session.as_str(),
                        entry.session_id,
                        entry.model.as_deref().unwrap_or(&model),
                        entry.turns,
                        entry.usage.input_tokens,
                        entry.usage.output_tokens,
                        context as f64 * 100.0 / window as f64,
                        agent.thinking()
                    ))?;
                }
                other => eprintln!("unknown command /{other}; /help lists them"),
            }
            continue;
        }
        let mut markdown = MarkdownStream::default();
        let mut on_event = |event: AgentEvent| match &event {
            AgentEvent::Text(text) if styled => {
                let shown = markdown.push(&lurkbot_core::printable(text));
                let _ = crate::run::print_stdout(&shown);
            }
            _ => show(false, &event),
        };
        let run_id = format!("run_{}", lurkbot_core::random_hex(8));
        let mut span = lurkbot_agent::turn_trace::turn_span(&session, &run_id, line);
        let turn =
            lurkbot_core::trace::scope(span.context(), agent.turn(&session, line, &mut on_event));
        let outcome = tokio::select! {
            outcome = turn => Some(outcome),
            _ = tokio::signal::ctrl_c() => None,
        };
        match &outcome {
            Some(Ok(done)) => lurkbot_agent::turn_trace::end_turn_span(&mut span, Ok(done)),
            Some(Err(e)) => {
                lurkbot_agent::turn_trace::end_turn_span(&mut span, Err(&e.to_string()))
            }
            None => span.fail("cancelled"),
        }
        drop(span);
        let rest = markdown.finish();
        if !rest.is_empty() {
            let _ = crate::run::print_stdout(&rest);
        }
        match outcome {
            Some(Ok(done)) => {
                if !done.text.ends_with('\n') {
                    let _ = crate::run::print_stdout("\n");
                }
            }
            Some(Err(e)) => eprintln!("lurkbot chat: {e}"),
            None => {
                agent.cancelled(&session)?;
                eprintln!("\n(cancelled)");
            }
        }
    }
}
