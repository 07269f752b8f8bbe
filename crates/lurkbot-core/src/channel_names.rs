//! The names of the channels this process knows: LurkBot's own ([`crate::CHANNEL_NAMES`]) and
//! those its plugins provide, registered when the plugin host reads their manifests. Code that
//! asks "is this a messaging channel?" (a session with someone on it is a third party's, a
//! recorded message names its channel) asks here, so a plugin's channel is held to the same
//! rules as a built-in one. Channel names live as long as the process (a handful, each kept
//! once).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static PLUGIN_CHANNELS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
/// Whether a plugin host has registered every installed plugin's channels in this process.
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Says the channels of every plugin installed at start are registered (the gateway's plugin
/// host, enabled or not): [`plugin_channels_registered`] then spares the per-turn look at the
/// manifests.
pub fn mark_plugin_channels_registered() {
    REGISTERED.store(true, Ordering::SeqCst);
}

/// Whether this process's registry holds every installed plugin's channels.
pub fn plugin_channels_registered() -> bool {
    REGISTERED.load(Ordering::SeqCst)
}

/// Registers `name` as a channel a plugin provides; its `'static` name. `None` for a name a
/// plugin channel cannot have (one of LurkBot's own, or not a plugin name).
pub fn register_plugin_channel(name: &str) -> Option<&'static str> {
    if crate::CHANNEL_NAMES.contains(&name) || !crate::is_plugin_name(name) {
        return None;
    }
    let mut known = PLUGIN_CHANNELS.lock().ok()?;
    if let Some(kept) = known.iter().find(|k| **k == name) {
        return Some(kept);
    }
    let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
    known.push(kept);
    Some(kept)
}

/// The channel called `name`, built-in or registered by a plugin.
pub fn known_channel(name: &str) -> Option<&'static str> {
    if let Some(own) = crate::CHANNEL_NAMES.iter().copied().find(|n| *n == name) {
        return Some(own);
    }
    PLUGIN_CHANNELS
        .lock()
        .ok()?
        .iter()
        .copied()
        .find(|n| *n == name)
}

/// The channels registered by plugins so far.
pub fn plugin_channel_names() -> Vec<&'static str> {
    PLUGIN_CHANNELS
        .lock()
        .map(|k| k.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_channel_is_known_once_registered_and_never_shadows_a_built_in_one() {
        assert_eq!(known_channel("zulip-test"), None);
        assert_eq!(register_plugin_channel("zulip-test"), Some("zulip-test"));
        assert_eq!(known_channel("zulip-test"), Some("zulip-test"));
        let again = register_plugin_channel("zulip-test").unwrap_or_default();
        assert!(std::ptr::eq(
            again,
            known_channel("zulip-test").unwrap_or_default()
        ));
        assert_eq!(register_plugin_channel("telegram"), None);
        assert_eq!(register_plugin_channel("Bad Name"), None);
        assert_eq!(known_channel("telegram"), Some("telegram"));
    }
}
