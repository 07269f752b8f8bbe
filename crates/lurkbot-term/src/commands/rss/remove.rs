//! `rss remove`: unsubscribe; the name's fetch state and cached items are removed too.

use serde_json::Map;

use super::args::RemoveArgs;
use super::store::RssStore;
use crate::{CommandCtx, CommandError, ErrorCode, Outcome};

pub(super) fn run(ctx: &CommandCtx<'_>, args: RemoveArgs) -> Result<Outcome, CommandError> {
    let name = args.name.as_str();
    let store = RssStore::lock(ctx.home)?;
    let mut subs = store.subscriptions()?;
    let index = subs.iter().position(|s| s.name == name).ok_or_else(|| {
        CommandError::new(
            ErrorCode::NotFound,
            format!("no subscription named '{name}'"),
        )
        .with_hint("'rss list' shows the subscriptions")
    })?;
    let removed = subs.remove(index);
    store.save_subscriptions(&subs)?;
    store.forget(name)?;
    let mut result = Map::new();
    result.insert("ok".into(), true.into());
    result.insert("command".into(), "rss remove".into());
    result.insert("name".into(), removed.name.into());
    result.insert("url".into(), removed.url.clone().into());
    Ok(Outcome {
        stdout: format!("Removed '{name}' ({})\n", removed.url),
        result,
        ..Outcome::default()
    })
}
