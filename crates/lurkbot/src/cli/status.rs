//! `lurkbot status`: the running gateway's headline figures since it started — turns, model
//! calls with their tokens and cost, tool calls, channel messages, the outbox, connections,
//! memory — from its `status` method (ARCHITECTURE.md §6.4). The same figures, labelled, are
//! `/metrics` for Prometheus.

use std::path::Path;

use lurkbot_core::Home;
use serde_json::{Value, json};

use crate::error::CliResult;

/// Arguments of `lurkbot status`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// Print the gateway's whole `status` as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(home_path: &Path, args: &StatusArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let status = super::remote::call_home_gateway(&home, "status", "status", json!({}))?;
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&status)?)
    } else {
        render(&status)
    };
    crate::run::print_stdout(&text)?;
    Ok(())
}

/// The headline figures as lines.
fn render(status: &Value) -> String {
    let n = |v: &Value| v.as_u64().unwrap_or_default();
    let m = &status["metrics"];
    let mut out = format!(
        "gateway    {} {} ({} state{})\n",
        status["gatewayId"].as_str().unwrap_or("-"),
        status["version"].as_str().unwrap_or_default(),
        status["stateStore"].as_str().unwrap_or("no"),
        status["model"]
            .as_str()
            .map(|model| format!(", model {model}"))
            .unwrap_or_default()
    );
    let turns = &m["turns"];
    out.push_str(&format!(
        "turns      {} ok, {} failed, {} refused by a budget\n",
        n(&turns["ok"]),
        n(&turns["error"]),
        n(&turns["budget"])
    ));
    let calls = &m["modelCalls"];
    let cost = calls["costUsd"].as_f64().unwrap_or_default();
    out.push_str(&format!(
        "model      {} calls ({} failed), {} tokens in, {} out{}\n",
        n(&calls["total"]),
        n(&calls["failed"]),
        n(&calls["inputTokens"]),
        n(&calls["outputTokens"]),
        if cost > 0.0 {
            format!(", ${cost:.4}")
        } else {
            String::new()
        }
    ));
    let tools = &m["toolCalls"];
    out.push_str(&format!(
        "tools      {} calls ({} failed), {} approvals asked\n",
        n(&tools["total"]),
        n(&tools["failed"]),
        n(&m["approvals"])
    ));
    let channels = &m["channelMessages"];
    out.push_str(&format!(
        "channels   {} in, {} out, {} retried, {} failed; outbox {} pending, {} failed\n",
        n(&channels["in"]),
        n(&channels["out"]),
        n(&channels["retried"]),
        n(&channels["failed"]),
        n(&status["outbox"]["pending"]),
        n(&status["outbox"]["failed"])
    ));
    let plugins: Vec<String> = status["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let restarts = n(&p["restarts"]);
            format!(
                "{} {}{}",
                p["name"].as_str().unwrap_or_default(),
                p["state"].as_str().unwrap_or_default(),
                if restarts > 0 {
                    format!(" ({restarts} restarts)")
                } else {
                    String::new()
                }
            )
        })
        .collect();
    if !plugins.is_empty() {
        out.push_str(&format!("plugins    {}\n", plugins.join(", ")));
    }
    out.push_str(&format!(
        "process    {} WebSocket connections, {:.1} MiB resident, {} open files\n",
        n(&status["connections"]),
        n(&m["rssBytes"]) as f64 / (1024.0 * 1024.0),
        n(&m["openFiles"])
    ));
    if n(&m["spansDropped"]) > 0 {
        out.push_str(&format!(
            "traces     {} spans dropped (the collector is slow or down)\n",
            n(&m["spansDropped"])
        ));
    }
    out.push_str("more       GET /metrics with the gateway token (Prometheus), `lurkbot usage` for spending\n");
    out
}
