//! `rss add`: subscribe, or point an existing name at a new URL.

use lurkbot_core::now_ms;
use serde_json::Map;

use super::args::AddArgs;
use super::store::{RssStore, Subscription};
use crate::{CommandCtx, CommandError, Outcome};

pub(super) fn run(ctx: &CommandCtx<'_>, args: AddArgs) -> Result<Outcome, CommandError> {
    let name = args.name.as_str();
    let url = args.url.to_string();
    let store = RssStore::lock(ctx.home)?;
    let mut subs = store.subscriptions()?;
    let now = now_ms();
    let (sub, previous_url) = match subs.iter_mut().find(|s| s.name == name) {
        Some(existing) => {
            let previous = std::mem::replace(&mut existing.url, url.clone());
            existing.updated_at_ms = now;
            (existing.clone(), Some(previous))
        }
        None => {
            let sub = Subscription {
                name: name.to_string(),
                url: url.clone(),
                created_at_ms: now,
                updated_at_ms: now,
            };
            subs.push(sub.clone());
            (sub, None)
        }
    };
    store.save_subscriptions(&subs)?;
    let url_changed = previous_url.as_ref().is_some_and(|p| *p != url);
    if url_changed {
        // Validators and cached items describe the old address.
        store.forget(name)?;
    }
    let stdout = match &previous_url {
        None => format!("Subscribed '{name}' to {url}\n"),
        Some(p) if url_changed => format!("Updated '{name}': {url} (was {p})\n"),
        Some(_) => format!("'{name}' already points to {url}\n"),
    };
    let mut result = Map::new();
    result.insert("ok".into(), true.into());
    result.insert("command".into(), "rss add".into());
    result.insert("name".into(), sub.name.into());
    result.insert("url".into(), sub.url.into());
    result.insert("created".into(), previous_url.is_none().into());
    if url_changed {
        result.insert("previous_url".into(), previous_url.into());
    }
    result.insert("created_at_ms".into(), sub.created_at_ms.into());
    result.insert("updated_at_ms".into(), sub.updated_at_ms.into());
    Ok(Outcome {
        stdout,
        result,
        ..Outcome::default()
    })
}
