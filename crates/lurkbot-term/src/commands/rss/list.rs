//! `rss list`: the subscriptions, a summary in stdout/result and everything with `--out`.

use super::args::ListArgs;
use serde_json::{Map, Value, json};

use super::store::RssStore;
use crate::{CommandCtx, CommandError, Outcome, output};

pub(super) fn run(ctx: &CommandCtx<'_>, args: ListArgs) -> Result<Outcome, CommandError> {
    let max = args.max;
    // Check --out before reading anything, so a bad path is refused first.
    if let Some(out) = &args.out {
        output::writable_target(ctx, out)?;
    }
    let (subs, states) = {
        let store = RssStore::lock(ctx.home)?;
        (store.subscriptions()?, store.states()?)
    };
    let capped = output::Capped::new(subs.len(), max);
    let (total, emitted) = (capped.total, capped.emitted);
    let mut stdout = match total {
        0 => "No subscriptions yet; add one with: rss add --name NAME --url URL\n".to_string(),
        1 => "1 subscription\n".to_string(),
        n => format!("{n} subscriptions\n"),
    };
    for sub in &subs[..emitted] {
        let last = states
            .iter()
            .find(|s| s.name == sub.name)
            .and_then(|s| s.last_status)
            .map_or_else(
                || "never fetched".to_string(),
                |code| format!("last fetch: {code}"),
            );
        stdout.push_str(&format!("{}  {}  ({last})\n", sub.name, sub.url));
    }
    stdout.push_str(&capped.more_line("subscriptions", "--max"));
    let mut artifacts = Vec::new();
    if let Some(out) = &args.out {
        let full: Vec<Value> = subs
            .iter()
            .map(|sub| {
                let mut entry = json!(sub);
                if let Some(map) = entry.as_object_mut() {
                    let state = states.iter().find(|s| s.name == sub.name);
                    map.insert("fetch_state".into(), json!(state));
                }
                entry
            })
            .collect();
        let artifact = output::write_json_out(
            ctx,
            out,
            &Value::Array(full),
            "every rss subscription with its fetch state",
        )?;
        stdout.push_str(&format!("Full list written to {}\n", artifact.path));
        artifacts.push(artifact);
    }
    let items: Vec<Value> = subs[..emitted]
        .iter()
        .map(|s| json!({"name": s.name, "url": s.url, "updated_at_ms": s.updated_at_ms}))
        .collect();
    let mut result = Map::new();
    result.insert("ok".into(), true.into());
    result.insert("command".into(), "rss list".into());
    capped.insert_into(&mut result);
    result.insert("items".into(), items.into());
    if let Some(out) = artifacts.first() {
        result.insert("out".into(), out.path.clone().into());
    }
    Ok(Outcome {
        stdout,
        result,
        artifacts,
        ..Outcome::default()
    })
}
